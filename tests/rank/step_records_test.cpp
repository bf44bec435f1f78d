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

}  // namespace
}  // namespace harness
