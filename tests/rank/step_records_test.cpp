#include "harness/rank/step_records.h"

#include <gtest/gtest.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

TEST(StepRecords, LoadImbalanceIsTheSlowestTrainingRanksComputeMinusTheMean) {
  // Two steps of three ranks, rank r's step s at r × 2 + s; rank 1 only serves.
  const std::vector<double> compute_s = {0.010, 0.020,   // rank 0
                                         0.000, 0.000,   // rank 1
                                         0.014, 0.020};  // rank 2
  const auto imbalance = load_imbalance_per_step(compute_s, 2, {true, false, true});
  ASSERT_EQ(imbalance.size(), 2U);
  EXPECT_NEAR(imbalance[0], 0.002, 1e-12);  // 0.014 - mean(0.010, 0.014)
  EXPECT_NEAR(imbalance[1], 0.0, 1e-12);
  // Counting the serving rank would make it 0.014 - 0.008.
  EXPECT_NEAR(load_imbalance_per_step(compute_s, 2, {true, true, true})[0], 0.006, 1e-12);
  // One training rank waits for nobody.
  EXPECT_EQ(load_imbalance_per_step({0.01, 0.02}, 2, {true}), std::vector<double>({0.0, 0.0}));
  EXPECT_THROW(load_imbalance_per_step({0.01, 0.02, 0.03}, 2, {true, true}), Error);
}

TEST(StepRecords, AppendingSlicesKeepsEverySeriesInStepOrder) {
  StepSeries series;  // before the first slice: no wait or imbalance series yet
  StepSeries slice;
  slice.step_s = {0.3, 0.4};
  slice.compute_s = {0.2, 0.3};
  slice.comm_s = {0.1, 0.1};
  slice.exposed_comm_s = {0.05, 0.1};
  slice.wait_s = std::vector<double>{0.0, 0.01};
  slice.imbalance_s = std::vector<double>{0.02, 0.0};
  append_steps(series, slice);
  append_steps(series, StepSeries{});  // a flush with no new steps on another rank
  append_steps(series, slice);
  EXPECT_EQ(series.step_s, std::vector<double>({0.3, 0.4, 0.3, 0.4}));
  EXPECT_EQ(series.compute_s, std::vector<double>({0.2, 0.3, 0.2, 0.3}));
  EXPECT_EQ(series.comm_s, std::vector<double>({0.1, 0.1, 0.1, 0.1}));
  EXPECT_EQ(series.exposed_comm_s, std::vector<double>({0.05, 0.1, 0.05, 0.1}));
  EXPECT_EQ(series.wait_s, std::vector<double>({0.0, 0.01, 0.0, 0.01}));
  EXPECT_EQ(series.imbalance_s, std::vector<double>({0.02, 0.0, 0.02, 0.0}));
}

}  // namespace
}  // namespace harness
