// Pure parts of the communication benchmark; the benchmark itself runs end to end in
// tests/e2e (every backend at 2 ranks, #wrong must be 0).
#include "harness/rank/comm_benchmark.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace harness {
namespace {

TEST(CommBenchmark, SizesStepByTheFactorAndEndAtTheMaximum) {
  CommOptions options;
  options.min_bytes = 4;
  options.max_bytes = 1024;
  options.size_factor = 4;
  EXPECT_EQ(comm_message_sizes(options), (std::vector<int64_t>{4, 16, 64, 256, 1024}));
  options.max_bytes = 100;  // not reached by the factor: still measured
  EXPECT_EQ(comm_message_sizes(options), (std::vector<int64_t>{4, 16, 64, 100}));
  options.min_bytes = 100;
  EXPECT_EQ(comm_message_sizes(options), (std::vector<int64_t>{100}));
}

// A backend that leaves NaN or infinity where a sum belongs (memory nobody wrote) is wrong there,
// not right: a NaN compares false with every bound.
TEST(CommBenchmark, NanAndInfinityAreWrongSums) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> expected = {1, 2, 1000, -3};
  EXPECT_EQ(elements_off(std::vector<float>{1, 2, 1000.005F, -3}, expected), 0) << "within rounding";
  EXPECT_EQ(elements_off(std::vector<float>{1, 2.001F, 1000, -3}, expected), 1);
  EXPECT_EQ(elements_off(std::vector<float>{nan, 2, inf, -inf}, expected), 3);
}

TEST(CommBenchmark, BusBandwidthIsTheAllreduceFormula) {
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10.0, 2), 10.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10.0, 4), 15.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(8.0, 8), 14.0);
}

}  // namespace
}  // namespace harness
