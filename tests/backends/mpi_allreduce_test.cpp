// Runs on every rank under mpirun (see tests/CMakeLists.txt: 1, 2 and 3 ranks).
#include "backends/mpi_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>

#include "harness/errors.h"

namespace harness {
namespace {

struct World {
  int rank = 0;
  int size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

class MpiAllreduceSizes : public ::testing::TestWithParam<int> {};

TEST_P(MpiAllreduceSizes, SumsEveryRanksBuffer) {
  const World world;
  // Sizes relative to the number of ranks catch chunking mistakes: 0, 1, p-1, p, p+1, large.
  const int code = GetParam();
  const std::size_t count = code >= 0 ? static_cast<std::size_t>(code)
                                      : static_cast<std::size_t>(world.size + code + 2);
  std::vector<float> local(count);
  std::mt19937 engine(1234 + world.rank);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  for (auto& value : local) value = uniform(engine);

  // Reference: every rank's buffer gathered, summed in double.
  std::vector<float> all(count * world.size);
  MPI_Allgather(local.data(), static_cast<int>(count), MPI_FLOAT, all.data(),
                static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
  MpiAllreduce backend(MPI_COMM_WORLD);
  std::vector<float> reduced = local;
  backend.allreduce_sum(reduced);

  int wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double expected = 0;
    for (int r = 0; r < world.size; ++r) expected += all[r * count + i];
    if (std::abs(reduced[i] - expected) > 1e-6 * std::max(1.0, std::abs(expected))) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "of " << count << " elements";
}

// Negative codes are relative to p (code + p + 2): -3 → p-1, -2 → p, -1 → p+1.
INSTANTIATE_TEST_SUITE_P(Sizes, MpiAllreduceSizes, ::testing::Values(0, 1, -3, -2, -1, 1000003));

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
    find_backend("nccl");
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "unknown backend \"nccl\" (expected one of: allreduce)");
  }
}

}  // namespace
}  // namespace harness
