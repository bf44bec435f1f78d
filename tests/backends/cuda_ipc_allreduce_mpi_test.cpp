// Backend cuda_ipc on GPUs against MPI_Allreduce, on every rank under mpirun (tests/CMakeLists.txt:
// 1 to 4 ranks, label gpu). Written for p ranks of one node, sharing one GPU or each on its own
// (with peer access); without a GPU or a CUDA build the GPU tests skip, and the refusals that
// need none still run.
#include "backends/cuda_ipc_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/device_staging.h"
#include "backends/registry.h"
#include "harness/common/errors.h"
#include "tests/backends/gpu_test_work.h"
#include "tests/backends/reduction_inputs.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// Why the GPU tests cannot run here, or "" (the same on every rank).
std::string why_not_here() {
  if (std::string reason = cuda_ipc_unavailable_reason(); !reason.empty()) return reason;
  const CudaStatus cuda = cuda_status();
  return cuda.usable ? "" : cuda.reason;
}

BackendOptions gpu_options(const Communicator& communicator, std::size_t one_shot_below_bytes,
                           bool device_arrivals = true) {
  BackendOptions options;
  options.device = "cuda";
  options.ranks = communicator.size();
  options.ranks_per_node = communicator.size();
  options.owned["cuda_ipc_one_shot_below_bytes"] = one_shot_below_bytes;
  options.owned["cuda_ipc_device_arrivals"] = device_arrivals;
  return options;
}

// Reduces `local` through `device_path` from a device buffer, at `offset` elements into it (the
// trainer's buckets are spans of one buffer), and returns the sums.
std::vector<float> reduced_on_device(DeviceStagedSync& device_path, const std::vector<float>& local,
                                     std::size_t offset) {
  std::vector<float> padded(offset + local.size(), 7.0F);
  std::copy(local.begin(), local.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset));
  DeviceBuffer device(padded.size());
  device.copy_from_host(padded);
  device_path.allreduce_sum(device.data() + offset, local.size());
  device.copy_to_host(padded);
  for (std::size_t i = 0; i < offset; ++i) EXPECT_EQ(padded[i], 7.0F) << "written before the span, at " << i;
  return {padded.begin() + static_cast<std::ptrdiff_t>(offset), padded.end()};
}

// Every size twice in a row (different data), with the one-shot kernel at every size, the
// two-shot at every size, and the default crossover between them, with arrivals on the GPU and on
// the host; one backend per configuration, so that its registered buffers grow with the sizes and
// are reused when a smaller one follows.
class CudaIpcArrivals : public ::testing::TestWithParam<bool> {};

TEST_P(CudaIpcArrivals, EqualsMpiAllreduceAtEverySizeTwiceInARowOnBothSidesOfTheCrossover) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  for (const std::size_t one_shot_below : {std::numeric_limits<std::size_t>::max(), std::size_t{0},
                                           kCudaIpcOneShotBelowBytes}) {
    const auto backend =
        make_gradient_sync("cuda_ipc", gpu_options(communicator, one_shot_below, GetParam()), communicator);
    // The trainer's buckets and the comm benchmark reach the backend through the device path.
    DeviceStagedSync device_path(*backend);
    EXPECT_EQ(device_path.path(), world.size > 1 ? "cuda_ipc" : kNoExchangePath);
    // 4097: the one-kernel path in several blocks; 131072 and 131073: its last size and the copy
    // path's first (cuda_ipc::kOneShotWithArrivalMaxCount).
    for (const int code : {0, 1, -3, -2, -1, 4097, 131072, 131073, 1000003, -1}) {
      const std::size_t count = element_count(code, world.size);
      for (int round = 0; round < 2; ++round) {
        const std::vector<float> local = random_buffer(count, 4321, world.rank, round);
        const std::vector<float> expected = mpi_allreduce_sum(local);
        const std::vector<float> reduced = reduced_on_device(device_path, local, round);  // offsets 0 and 1
        EXPECT_EQ(elements_off(reduced, expected), 0)
            << "of " << count << " elements differ from MPI_Allreduce, round " << round + 1
            << ", one-shot below " << one_shot_below << " bytes";
        EXPECT_TRUE(same_bits_as_rank_zero(reduced))
            << "ranks disagree on the sum of " << count << " elements, round " << round + 1;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OnTheGpuAndOnTheHost, CudaIpcArrivals, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "DeviceArrivals" : "HostArrivals");
                         });

// Both kernels add in rank order: the crossover changes the time, never the bits.
TEST(CudaIpcAllreduce, OneShotAndTwoShotGiveTheSameBits) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  const std::vector<float> local = random_buffer(100003, 4321, world.rank, 5);
  std::vector<std::vector<float>> sums;
  for (const std::size_t one_shot_below : {std::numeric_limits<std::size_t>::max(), std::size_t{0}}) {
    const auto backend = make_gradient_sync("cuda_ipc", gpu_options(communicator, one_shot_below), communicator);
    DeviceStagedSync device_path(*backend);
    sums.push_back(reduced_on_device(device_path, local, 0));
  }
  EXPECT_EQ(std::memcmp(sums[0].data(), sums[1].data(), local.size() * sizeof(float)), 0);
}

// Every rank's `random_buffer(count, seed, rank, round)` summed in rank order in float, as the
// kernels add: the bits every rank must get.
std::vector<float> rank_order_sum(std::size_t count, unsigned seed, int ranks, int round) {
  std::vector<float> sum = random_buffer(count, seed, 0, round);
  for (int rank = 1; rank < ranks; ++rank) {
    const std::vector<float> addend = random_buffer(count, seed, rank, round);
    for (std::size_t i = 0; i < count; ++i) sum[i] += addend[i];
  }
  return sum;
}

// The kernels move 16-byte vectors over the part of the range where the caller's buffer is
// aligned as the regions are, one float at a time elsewhere (cuda_ipc_vectors.h): at every
// alignment of the buffer (offsets 0 to 3 floats), for lengths around a vector and slices that
// start and end anywhere, both kernels give exactly the rank-order sums.
TEST(CudaIpcAllreduce, SumsAreTheRankOrderSumsBitForBitAtEveryAlignment) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  // Host arrivals, so that small buffers too go through the two kernels, not the one-kernel path.
  for (const std::size_t one_shot_below : {std::numeric_limits<std::size_t>::max(), std::size_t{0}}) {
    const auto backend = make_gradient_sync("cuda_ipc", gpu_options(communicator, one_shot_below, false), communicator);
    DeviceStagedSync device_path(*backend);
    for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5},
                                    std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{17},
                                    4 * static_cast<std::size_t>(world.size) + 1, std::size_t{1000003}}) {
      for (std::size_t offset = 0; offset < 4; ++offset) {
        const int round = static_cast<int>(offset);
        const std::vector<float> local = random_buffer(count, 2468, world.rank, round);
        const std::vector<float> expected = rank_order_sum(count, 2468, world.size, round);
        const std::vector<float> reduced = reduced_on_device(device_path, local, offset);
        EXPECT_EQ(std::memcmp(reduced.data(), expected.data(), count * sizeof(float)), 0)
            << count << " elements at offset " << offset << ", one-shot below " << one_shot_below << " bytes";
      }
    }
  }
}

// Registration runs one round of arrivals on the stream before relying on them, within a time
// limit: on a GPU where they work it passes, and the backend keeps them (rank 0 would say
// otherwise on stderr), again when a larger buffer registers anew.
TEST(CudaIpcAllreduce, ArrivalsOnTheStreamProveThemselvesWhenBuffersAreRegistered) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (world.size == 1) GTEST_SKIP() << "needs two ranks";
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  const auto backend = make_gradient_sync("cuda_ipc", gpu_options(communicator, 0), communicator);  // two-shot
  DeviceStagedSync device_path(*backend);
  ::testing::internal::CaptureStderr();
  for (const std::size_t count : {std::size_t{1000}, std::size_t{300000}}) {  // the second registers anew
    const std::vector<float> local = random_buffer(count, 97, world.rank);
    const std::vector<float> expected = rank_order_sum(count, 97, world.size, 0);
    const std::vector<float> reduced = reduced_on_device(device_path, local, 0);
    EXPECT_EQ(std::memcmp(reduced.data(), expected.data(), count * sizeof(float)), 0) << count << " elements";
  }
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.find("arrive through the host instead"), std::string::npos) << said;
}

// Calls back to back, each with one rank's stream lagging (a 2 ms kernel queued before the
// kernel that writes its buffer, both on the default stream, where the trainer's kernels go), the
// one-kernel path, the copy path's one-shot and two-shot alternating, and their block counts
// varying (each block's epochs its own): the sums stay exact. Nothing is checked until every call
// is done, so that no copy between them lets a lagging stream catch up.
TEST(CudaIpcAllreduce, BackToBackCallsWithALaggingStreamStayExact) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (world.size == 1) GTEST_SKIP() << "needs two ranks";
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  // 1 MiB: 200000 floats go one-shot through the copy path, 400000 two-shot; up to 131072 one
  // kernel where arrivals are on the GPU.
  const std::vector<std::size_t> counts = {1000, 200000, 4097, 400000, 131072, 3, 131073, 300};
  for (const bool device_arrivals : {true, false}) {
    const auto backend =
        make_gradient_sync("cuda_ipc", gpu_options(communicator, std::size_t{1} << 20, device_arrivals), communicator);
    DeviceStagedSync device_path(*backend);
    constexpr int kCalls = 48;
    std::vector<std::unique_ptr<DeviceBuffer>> buffers;  // allocated first: cudaMalloc may synchronise
    for (int call = 0; call < kCalls; ++call) {
      buffers.push_back(std::make_unique<DeviceBuffer>(counts[static_cast<std::size_t>(call) % counts.size()]));
    }
    for (int call = 0; call < kCalls; ++call) {
      DeviceBuffer& buffer = *buffers[static_cast<std::size_t>(call)];
      if (call % world.size == world.rank) {
        ASSERT_EQ(gpu_test::queue_busy_kernel(2000), cudaSuccess);
      }
      ASSERT_EQ(gpu_test::queue_fill(buffer.data(), buffer.size(), world.rank, call), cudaSuccess);
      device_path.allreduce_sum(buffer.data(), buffer.size());
    }
    for (int call = 0; call < kCalls; ++call) {
      const std::size_t count = buffers[static_cast<std::size_t>(call)]->size();
      std::vector<float> reduced(count);
      buffers[static_cast<std::size_t>(call)]->copy_to_host(reduced);
      int wrong = 0;
      for (std::size_t i = 0; i < count; ++i) {
        float expected = 0;
        for (int rank = 0; rank < world.size; ++rank) expected += gpu_test::fill_value(i, rank, call);
        if (reduced[i] != expected) ++wrong;
      }
      EXPECT_EQ(wrong, 0) << "call " << call << " (" << count << " elements, arrivals on the "
                          << (device_arrivals ? "GPU" : "host") << ")";
    }
  }
}

// Ranks that pass different element counts would read past each other's regions: every rank
// stops with the same error instead, at the first arrival.
TEST(CudaIpcAllreduce, RanksThatReduceDifferentCountsAllFail) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (world.size == 1) GTEST_SKIP() << "needs two ranks";
  if (const std::string reason = why_not_here(); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  const auto backend = make_gradient_sync("cuda_ipc", gpu_options(communicator, kCudaIpcOneShotBelowBytes),
                                          communicator);
  const std::size_t count = 1000 + static_cast<std::size_t>(world.rank);
  DeviceBuffer device(count);
  try {
    backend->allreduce_sum(std::span<float>(device.data(), count));
    ADD_FAILURE() << "different counts accepted";
  } catch (const CommError& error) {
    EXPECT_NE(std::string(error.what()).find("cuda_ipc: ranks disagree on the buffer to reduce, from 1000 to " +
                                             std::to_string(999 + world.size) + " elements"),
              std::string::npos)
        << error.what();
  }
}

// Host memory never reaches it: made for device "cpu" it refuses, in every build, with the
// reason the validation gives before launch.
TEST(CudaIpcAllreduce, RefusesToBeMadeForHostMemory) {
  const Communicator communicator(MPI_COMM_WORLD);
  BackendOptions options;
  options.ranks = communicator.size();
  try {
    make_gradient_sync("cuda_ipc", options, communicator);
    ADD_FAILURE() << "made for host memory";
  } catch (const NotSupported& error) {
    const std::string unavailable = cuda_ipc_unavailable_reason();
    EXPECT_EQ(std::string(error.what()),
              unavailable.empty()
                  ? "device: backend \"cuda_ipc\" reduces GPU memory only; expected \"cuda\", got \"cpu\""
                  : unavailable);
  }
}

}  // namespace
}  // namespace harness
