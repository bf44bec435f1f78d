// The statistics and verdict rules of `harness check`, on numbers worked out by hand.
#include "harness/check/check_statistics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace harness {
namespace {

const CheckMetric& metric(std::string_view name) { return find_check_metric(name, "test"); }

TEST(CheckStatistics, StudentsTQuantilesMatchTheTables) {
  EXPECT_NEAR(t_quantile_975(1), 12.706, 1e-3);
  EXPECT_NEAR(t_quantile_975(4), 2.776, 1e-3);
  EXPECT_NEAR(t_quantile_975(9), 2.262, 1e-3);
  EXPECT_NEAR(t_quantile_975(1e6), 1.960, 1e-3);
}

TEST(CheckStatistics, PairedIntervalIsTheTIntervalOfTheDifferences) {
  // Differences 0.1, 0.2, 0.3: mean 0.2, sd 0.1, half width t(2) 0.1 / sqrt(3).
  const ChangeEstimate estimate = paired_change({1.1, 2.2, 3.3}, {1.0, 2.0, 3.0});
  EXPECT_NEAR(estimate.log_ratio, 0.2, 1e-12);
  const double half_width = 4.302653 * 0.1 / std::sqrt(3.0);
  EXPECT_NEAR(estimate.low, 0.2 - half_width, 1e-5);
  EXPECT_NEAR(estimate.high, 0.2 + half_width, 1e-5);
  EXPECT_TRUE(estimate.has_interval);
  EXPECT_FALSE(paired_change({1.0}, {2.0}).has_interval);
}

TEST(CheckStatistics, WelchIntervalUsesSatterthwaitesDegreesOfFreedom) {
  // Current 1, 2, 3 (var 1), baseline 0, 0.5, 1, 1.5 (var 5/12).
  const ChangeEstimate estimate = welch_change({1, 2, 3}, {0, 0.5, 1, 1.5});
  EXPECT_NEAR(estimate.log_ratio, 2 - 0.75, 1e-12);
  const double a = 1.0 / 3, b = (5.0 / 12) / 4;
  const double df = (a + b) * (a + b) / (a * a / 2 + b * b / 3);
  const double half_width = t_quantile_975(df) * std::sqrt(a + b);
  EXPECT_NEAR(estimate.high - estimate.log_ratio, half_width, 1e-9);
  EXPECT_GT(df, 2);
  EXPECT_LT(df, 5);
}

TEST(CheckStatistics, AChangeBeyondTheThresholdWhoseIntervalExcludesNoChangeIsARegression) {
  const MetricLimits limits{0.10, 0};
  // reduce_time: lower is better; +30%, interval all above zero.
  const ChangeEstimate slower = paired_change({std::log(1.30), std::log(1.31), std::log(1.29)}, {0, 0, 0});
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 1.3, slower, 3, 3, true).verdict, Verdict::kRegression);
  // busbw: higher is better, so the same rise is an improvement.
  EXPECT_EQ(judge_metric(metric("busbw"), limits, 1, 1.3, slower, 3, 3, true).verdict, Verdict::kImproved);
  // Within the threshold: a pass, however certain.
  const ChangeEstimate small = paired_change({std::log(1.05), std::log(1.05), std::log(1.06)}, {0, 0, 0});
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 1.05, small, 3, 3, true).verdict, Verdict::kPass);
}

TEST(CheckStatistics, AWideIntervalIsInconclusiveAndSaysHowManyRepeatsWouldDecide) {
  const MetricLimits limits{0.10, 0};
  const ChangeEstimate noisy = paired_change({std::log(2.0), std::log(0.8), std::log(1.6)}, {0, 0, 0});
  ASSERT_LT(noisy.low, 0);
  const Judgement judgement = judge_metric(metric("reduce_time"), limits, 1, 1.4, noisy, 3, 3, true);
  EXPECT_EQ(judgement.verdict, Verdict::kInconclusive);
  EXPECT_NE(judgement.note.find("repeats per side would decide"), std::string::npos) << judgement.note;
  EXPECT_GT(repeats_needed(noisy, true), 3);
}

TEST(CheckStatistics, FewerThanThreeRepeatsAreInconclusiveWithTheNumberNeeded) {
  const MetricLimits limits{0.10, 0};
  const ChangeEstimate two = welch_change({0.01, 0.02}, {0, 0.005});
  const Judgement judgement = judge_metric(metric("reduce_time"), limits, 1, 1.01, two, 2, 2, false);
  EXPECT_EQ(judgement.verdict, Verdict::kInconclusive);
  EXPECT_EQ(judgement.note.rfind("2 repeat(s) per side; at least ", 0), 0U) << judgement.note;
}

TEST(CheckStatistics, DifferencesBelowTheFloorPass) {
  const ChangeEstimate doubled = paired_change({std::log(2), std::log(2), std::log(2)}, {0, 0, 0});
  // 0.4 us to 0.8 us: +100%, but below a 0.5 us floor.
  const Judgement judgement = judge_metric(metric("reduce_time"), {0.10, 0.5}, 0.4, 0.8, doubled, 3, 3, true);
  EXPECT_EQ(judgement.verdict, Verdict::kPass);
  EXPECT_EQ(judgement.note, "difference below the floor of 0.5 us");
}

}  // namespace
}  // namespace harness
