// Pure parts of the communication benchmark; the benchmark itself runs end to end in
// tests/e2e (every backend at 2 ranks, #wrong must be 0).
#include "harness/rank/comm_benchmark.h"

#include <gtest/gtest.h>

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

TEST(CommBenchmark, BusBandwidthIsTheAllreduceFormula) {
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10.0, 2), 10.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(10.0, 4), 15.0);
  EXPECT_DOUBLE_EQ(allreduce_bus_bandwidth(8.0, 8), 14.0);
}

}  // namespace
}  // namespace harness
