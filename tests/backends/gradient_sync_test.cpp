// Every backend that reduces host memory against MPI_Allreduce, on every rank under mpirun
// (tests/CMakeLists.txt runs this binary with 1, 2, 3 and 4 ranks). Sweeps Combine(backends,
// sizes), as gloo's tests do. nccl, on GPU memory, has its own (nccl_allreduce_mpi_test.cpp).
#include "backends/gradient_sync.h"
#include "backends/registry.h"

#include "backends/gloo_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>

#include "harness/common/errors.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// Sizes relative to the number of ranks catch chunking mistakes. Codes below 0 mean p + code + 2:
// -3 → p-1, -2 → p, -1 → p+1.
std::size_t element_count(int code, int ranks) {
  return code >= 0 ? static_cast<std::size_t>(code) : static_cast<std::size_t>(ranks + code + 2);
}

std::vector<float> sync_buffer(std::size_t count, int rank) {
  std::vector<float> buffer(count);
  std::mt19937 engine(1234 + rank);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  for (auto& value : buffer) value = uniform(engine);
  return buffer;
}

using BackendAndSize = std::tuple<std::string, int>;

class EveryBackend : public ::testing::TestWithParam<BackendAndSize> {};

TEST_P(EveryBackend, MatchesMpiAllreduceAndAgreesOnEveryRank) {
  const World world;
  const auto& [backend_name, size_code] = GetParam();
  if (backend_name == "gloo" && !gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  if (refuses_across_nodes(backend_name)) return;
  const std::size_t count = element_count(size_code, world.size);
  const std::vector<float> local = sync_buffer(count, world.rank);

  // Two references: MPI_Allreduce itself, and every rank's buffer gathered and summed in double
  // (the one the `allreduce` backend cannot trivially agree with).
  std::vector<float> mpi_sum = local;
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, mpi_sum.data(), static_cast<int>(count), MPI_FLOAT,
                          MPI_SUM, MPI_COMM_WORLD),
            MPI_SUCCESS);
  std::vector<float> all(count * world.size);
  ASSERT_EQ(MPI_Allgather(local.data(), static_cast<int>(count), MPI_FLOAT, all.data(),
                          static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD),
            MPI_SUCCESS);
  const auto backend = make_gradient_sync(backend_name, MPI_COMM_WORLD);
  std::vector<float> reduced = local;
  backend->allreduce_sum(reduced);

  const auto close = [](double value, double reference) {
    return std::abs(value - reference) <= 1e-6 * std::max(1.0, std::abs(reference));
  };
  int wrong_vs_mpi = 0;
  int wrong_vs_exact = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double exact = 0;
    for (int r = 0; r < world.size; ++r) exact += all[r * count + i];
    wrong_vs_mpi += close(reduced[i], mpi_sum[i]) ? 0 : 1;
    wrong_vs_exact += close(reduced[i], exact) ? 0 : 1;
  }
  EXPECT_EQ(wrong_vs_mpi, 0) << "of " << count << " elements differ from MPI_Allreduce";
  EXPECT_EQ(wrong_vs_exact, 0) << "of " << count << " elements differ from the exact sum";

  // Synchronous SGD needs bit-identical sums on every rank, or the replicas drift apart.
  std::vector<float> from_zero = reduced;
  MPI_Bcast(from_zero.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(std::memcmp(from_zero.data(), reduced.data(), count * sizeof(float)), 0)
      << "ranks disagree on the sum";
}

TEST_P(EveryBackend, BackToBackCallsDoNotMixMessages) {
  // Two reductions in a row with different data: tags and ordering must keep them apart.
  const World world;
  const auto& [backend_name, size_code] = GetParam();
  if (backend_name == "gloo" && !gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  if (refuses_across_nodes(backend_name)) return;
  const std::size_t count = element_count(size_code, world.size);
  const auto backend = make_gradient_sync(backend_name, MPI_COMM_WORLD);
  std::vector<float> ones(count, 1.0F);
  std::vector<float> ranks(count, static_cast<float>(world.rank));
  backend->allreduce_sum(ones);
  backend->allreduce_sum(ranks);
  const float rank_sum = static_cast<float>(world.size * (world.size - 1) / 2);
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_EQ(ones[i], static_cast<float>(world.size)) << i;
    ASSERT_EQ(ranks[i], rank_sum) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, EveryBackend,
    ::testing::Combine(::testing::ValuesIn(host_memory_backend_names()),
                       ::testing::Values(0, 1, -3, -2, -1, 1000003)),
    [](const ::testing::TestParamInfo<BackendAndSize>& info) {
      const int code = std::get<1>(info.param);
      const std::string size = code == -3   ? "p_minus_1"
                               : code == -2 ? "p"
                               : code == -1 ? "p_plus_1"
                                            : std::to_string(code);
      return std::get<0>(info.param) + "_" + size;
    });

// The sum over one rank is its own buffer: on one rank every backend exchanges nothing (and sets up
// nothing: no segment, no store), on more every backend exchanges.
TEST(EveryBackendOnOneRank, ExchangesNothingAndLeavesTheBufferAsItIs) {
  const World world;
  for (const std::string& name : host_memory_backend_names()) {
    if (name == "gloo" && !gloo_available()) continue;
    if (refuses_across_nodes(name)) continue;
    const auto backend = make_gradient_sync(name, MPI_COMM_WORLD);
    EXPECT_EQ(backend->exchanges(), world.size > 1) << name;
    EXPECT_EQ(backend->name(), name);
    if (world.size > 1) continue;
    std::vector<float> buffer = sync_buffer(1000, world.rank);
    const std::vector<float> before = buffer;
    backend->allreduce_sum(buffer);
    EXPECT_EQ(buffer, before) << name;
    EXPECT_EQ(backend->allocate_buffer(1000), nullptr) << name << ": no shared segment for one rank";
  }
}

// A point's shm_reduce_threads reaches shm and hier (and the comm benchmark's probes, which run
// host_threads() threads); every other backend adds on one.
TEST(ShmReduceThreads, ReachTheBackendsThatOwnTheSettingAndNoOther) {
  const World world;
  if (world.size == 1) GTEST_SKIP() << "one rank exchanges nothing, on no thread";
  BackendOptions options;
  options.ranks = world.size;
  options.owned["shm_reduce_threads"] = 2;
  for (const std::string& name : host_memory_backend_names()) {
    if (name == "gloo" && !gloo_available()) continue;
    if (refuses_across_nodes(name)) continue;
    const auto backend = make_gradient_sync(name, options, MPI_COMM_WORLD);
    EXPECT_EQ(backend->host_threads(), name == "shm" || name == "hier" ? 2 : 1) << name;
  }
}

// Across hosts whose names do not resolve (simulated nodes, or a cluster without DNS for its
// nodes), Gloo's rendezvous would wait for ever: without GLOO_SOCKET_IFNAME it must refuse.
TEST(Gloo, AcrossHostsItNeedsResolvableNamesOrAnInterfaceAndSaysSo) {
  const World world;
  if (!gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  if (world.nodes == 1) GTEST_SKIP() << "one node: Gloo uses the loopback";
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  const std::string saved = interface != nullptr ? interface : "";
  unsetenv("GLOO_SOCKET_IFNAME");
  try {
    make_gradient_sync("gloo", MPI_COMM_WORLD);
    // Names that resolve (a real cluster): nothing to refuse.
  } catch (const CommError& error) {
    EXPECT_NE(std::string(error.what()).find("set GLOO_SOCKET_IFNAME"), std::string::npos) << error.what();
  }
  if (!saved.empty()) setenv("GLOO_SOCKET_IFNAME", saved.c_str(), 1);
  setenv("GLOO_SOCKET_IFNAME", "no-such-interface0", 1);
  EXPECT_THROW(make_gradient_sync("gloo", MPI_COMM_WORLD), CommError);
  if (saved.empty()) {
    unsetenv("GLOO_SOCKET_IFNAME");
  } else {
    setenv("GLOO_SOCKET_IFNAME", saved.c_str(), 1);
  }
}

TEST(CheckMpi, FailedCallBecomesCommErrorWithTheMpiMessage) {
  try {
    check_mpi(MPI_ERR_COUNT, "MPI_Allreduce");
    FAIL() << "no error";
  } catch (const CommError& error) {
    EXPECT_NE(std::string(error.what()).find("MPI_Allreduce failed: "), std::string::npos);
  }
}

TEST(BackendTable, UnknownNameListsTheValidOnes) {
  try {
    find_backend("horovod");
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(),
                 "unknown backend \"horovod\" (expected one of: allreduce, ring, ps, shm, hier, gloo, nccl, cuda_ipc)");
  }
}

}  // namespace
}  // namespace harness
