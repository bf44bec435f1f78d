// The statistics and verdict rules of `harness check`, on numbers worked out by hand.
#include "harness/check/check_statistics.h"

#include "harness/check/check_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  // Current 1, 2, 3 (variance 1), baseline 0, 0.5, 1, 1.5 (variance 5/12): standard error
  // sqrt(1/3 + 5/48) = 0.661438 on 3.2347 degrees of freedom, t = 3.055713 (computed apart from
  // Boost, by bisection on the incomplete beta function).
  const ChangeEstimate estimate = welch_change({1, 2, 3}, {0, 0.5, 1, 1.5});
  EXPECT_NEAR(estimate.log_ratio, 1.25, 1e-12);
  EXPECT_NEAR(estimate.high - estimate.log_ratio, 3.055713 * 0.661438, 1e-5);
  EXPECT_FALSE(estimate.paired);
  EXPECT_EQ(estimate.current_count, 3);
  EXPECT_EQ(estimate.baseline_count, 4);
}

TEST(CheckStatistics, AChangeBeyondTheThresholdWhoseIntervalExcludesNoChangeIsARegression) {
  const MetricLimits limits{0.10, 0};
  // reduce_time: lower is better; +30%, interval all above zero.
  const ChangeEstimate slower = paired_change({std::log(1.30), std::log(1.31), std::log(1.29)}, {0, 0, 0});
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 1.3, slower).verdict, Verdict::kRegression);
  // busbw: higher is better, so the same rise is an improvement.
  EXPECT_EQ(judge_metric(metric("busbw"), limits, 1, 1.3, slower).verdict, Verdict::kImproved);
  // Within the threshold: a pass, however certain.
  const ChangeEstimate small = paired_change({std::log(1.05), std::log(1.05), std::log(1.06)}, {0, 0, 0});
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 1.05, small).verdict, Verdict::kPass);
}

TEST(CheckStatistics, AFallInAMetricWhereHigherIsBetterIsARegression) {
  const MetricLimits limits{0.10, 0};
  const ChangeEstimate lower = paired_change({std::log(0.7), std::log(0.71), std::log(0.69)}, {0, 0, 0});
  EXPECT_EQ(judge_metric(metric("busbw"), limits, 1, 0.7, lower).verdict, Verdict::kRegression);
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 0.7, lower).verdict, Verdict::kImproved);
  // The same fall with an interval over no change: inconclusive, for busbw only.
  const ChangeEstimate noisy = paired_change({std::log(0.4), std::log(1.2), std::log(0.6)}, {0, 0, 0});
  ASSERT_GT(noisy.high, 0);
  EXPECT_EQ(judge_metric(metric("busbw"), limits, 1, 0.69, noisy).verdict, Verdict::kInconclusive);
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 0.69, noisy).verdict, Verdict::kPass);
}

TEST(CheckStatistics, AWideIntervalIsInconclusiveAndSaysHowManyRepeatsWouldDecide) {
  const MetricLimits limits{0.10, 0};
  const ChangeEstimate noisy = paired_change({std::log(2.0), std::log(0.8), std::log(1.6)}, {0, 0, 0});
  ASSERT_LT(noisy.low, 0);
  const Judgement judgement = judge_metric(metric("reduce_time"), limits, 1, 1.4, noisy);
  EXPECT_EQ(judgement.verdict, Verdict::kInconclusive);
  EXPECT_NE(judgement.note.find("repeats per side would decide"), std::string::npos) << judgement.note;
  // Mean log 0.31334, sd 0.47781: t(n-1) 0.47781 / sqrt(n) < 0.31334 first at n = 12.
  EXPECT_EQ(repeats_needed(noisy), 12);
  // Never fewer than a side has already.
  ChangeEstimate wide = welch_change({0.0, 0.3, 0.6, 0.9, 1.2, 1.5}, {0.0, 0.01, 0.02, 0.0, 0.01, 0.02});
  EXPECT_GT(repeats_needed(wide), 6);
}

// 50% slower in every one of 5 repeats and 65 times slower in one of them: the outlier widens the
// t-interval past no change, but every repeat is beyond the threshold, so it is a regression (it
// was INCONCLUSIVE, which the CI gate passes). One repeat within the threshold keeps it
// inconclusive; unpaired, every current value must be beyond every baseline value.
TEST(CheckStatistics, AnOutlierInTheBadDirectionDoesNotHideAChangeInEveryRepeat) {
  const MetricLimits limits{0.25, 0};
  const std::vector<double> none = {0, 0.02, -0.02, 0.01, -0.01};
  const std::vector<double> slower = {std::log(1.5), std::log(1.5) + 0.02, std::log(1.5) - 0.02,
                                      std::log(1.5) + 0.01, std::log(1.5 * 65) - 0.01};
  const ChangeEstimate paired = paired_change(slower, none);
  ASSERT_LT(paired.low, 0) << "the interval includes no change";
  const Judgement judgement = judge_metric(metric("reduce_time"), limits, 1, 3, paired);
  EXPECT_EQ(judgement.verdict, Verdict::kRegression);
  EXPECT_NE(judgement.note.find("every repeat beyond the threshold (the least by +50.0%)"), std::string::npos)
      << judgement.note;
  // busbw falls by as much: a regression there too.
  std::vector<double> lower;
  for (const double value : slower) lower.push_back(-value);
  EXPECT_EQ(judge_metric(metric("busbw"), limits, 1, 0.33, paired_change(lower, none)).verdict, Verdict::kRegression);
  // One repeat only 10% slower: inconclusive, as before.
  std::vector<double> mixed = slower;
  mixed[1] = std::log(1.1);
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 3, paired_change(mixed, none)).verdict,
            Verdict::kInconclusive);
  const ChangeEstimate unpaired = welch_change(slower, none);
  EXPECT_NEAR(unpaired.least_difference, std::log(1.5) - 0.02 - 0.02, 1e-12);
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 3, unpaired).verdict, Verdict::kRegression);
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 3, welch_change(mixed, none)).verdict,
            Verdict::kInconclusive);
}

TEST(CheckStatistics, FewerThanThreeRepeatsAreInconclusiveWithTheNumberNeeded) {
  const MetricLimits limits{0.10, 0};
  // A change beyond the threshold: the repeats that would decide it.
  const ChangeEstimate two = welch_change({0.30, 0.32}, {0, 0.005});
  const Judgement judgement = judge_metric(metric("reduce_time"), limits, 1, 1.36, two);
  EXPECT_EQ(judgement.verdict, Verdict::kInconclusive);
  EXPECT_EQ(judgement.note, "2 repeat(s) per side; at least 3 needed") << judgement.note;
  // A change within the threshold: three would do; no search for a tiny change's repeats.
  const ChangeEstimate tiny = welch_change({0.001, 0.0011}, {0, 0.0002});
  EXPECT_EQ(judge_metric(metric("reduce_time"), limits, 1, 1.001, tiny).note, "2 repeat(s) per side; at least 3 needed");
}

TEST(CheckStatistics, ValuesBeyondTheArithmeticOfDoublesAreInconclusiveNotAnError) {
  // A hand-edited record: the variance of the differences overflows; no interval, no exception.
  const ChangeEstimate huge = welch_change({1e200, 3e200, 2e200}, {0, 1, 1.2});
  EXPECT_FALSE(huge.has_interval);
  const Judgement judgement = judge_metric(metric("reduce_time"), {0.10, 0.5}, 0.73, 2e200, huge, false);
  EXPECT_EQ(judgement.verdict, Verdict::kInconclusive);
  EXPECT_EQ(judgement.note, "no interval: the values are beyond what the arithmetic of doubles holds");
  EXPECT_FALSE(paired_change({1e200, -1e200, 1e200}, {0, 0, 0}).has_interval);
  // Sides of different sizes are named as such.
  EXPECT_EQ(judge_metric(metric("reduce_time"), {0.10, 0}, 1, 1.36, welch_change({0.30, 0.32}, {0, 0.005, 0.01})).note,
            "2 repeat(s) now, 3 on the other side; at least 4 needed");
}

TEST(CheckStatistics, DifferencesBelowTheFloorPass) {
  const ChangeEstimate doubled = paired_change({std::log(2), std::log(2), std::log(2)}, {0, 0, 0});
  // 0.4 us to 0.8 us: +100%, but below a 0.5 us floor.
  const Judgement judgement = judge_metric(metric("reduce_time"), {0.10, 0.5}, 0.4, 0.8, doubled);
  EXPECT_EQ(judgement.verdict, Verdict::kPass);
  EXPECT_EQ(judgement.note, "difference below the floor of 0.5 us");
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST(CheckStatistics, NumbersArePlainDecimals) {
  EXPECT_EQ(format_number(0.5), "0.5");
  EXPECT_EQ(format_number(0.00001), "0.00001");
  EXPECT_EQ(format_number(1e-9), "0");
  EXPECT_EQ(format_number(12), "12");
  EXPECT_EQ(format_number(std::nan("")), "n/a");
  EXPECT_EQ(format_value(1e-7), "0.000000100");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "n/a");
  EXPECT_EQ(format_change(-0.25), "-25.0%");
}

}  // namespace
}  // namespace harness
