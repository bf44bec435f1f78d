#include "harness/results/statistics.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(Statistics, MedianOfOddEvenAndNone) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({}), 0.0);
}

TEST(Statistics, PercentileInterpolatesBetweenSortedValues) {
  const std::vector<double> sorted = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(percentile(sorted, 0.0), 10);
  EXPECT_DOUBLE_EQ(percentile(sorted, 0.5), 30);
  EXPECT_DOUBLE_EQ(percentile(sorted, 1.0), 50);
  EXPECT_DOUBLE_EQ(percentile(sorted, 0.125), 15);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0);
}

TEST(Statistics, BootstrapMedianIntervalHoldsTheMedianWithinTheData) {
  const Interval one = bootstrap_median({7});
  EXPECT_EQ(one.low, 7);
  EXPECT_EQ(one.high, 7);
  const std::vector<double> values = {4, 5, 6, 5.5, 4.5, 9};
  const Interval interval = bootstrap_median(values);
  EXPECT_DOUBLE_EQ(interval.median, 5.25);
  EXPECT_GE(interval.low, 4);
  EXPECT_LE(interval.high, 9);
  EXPECT_LE(interval.low, interval.median);
  EXPECT_GE(interval.high, interval.median);
  EXPECT_LT(interval.low, interval.high);  // six different values: an interval, not a point
  // Deterministic: summaries rebuilt from records give the same numbers.
  EXPECT_EQ(bootstrap_median(values).low, interval.low);
  EXPECT_EQ(bootstrap_median(values).high, interval.high);
}

TEST(Statistics, RatioIntervalLiesWithinTheExtremeRatios) {
  const Interval ratio = bootstrap_statistic({8, 9, 10}, {4, 5, 6}, [](double a, double b) { return a / b; });
  EXPECT_DOUBLE_EQ(ratio.median, 9.0 / 5.0);
  EXPECT_GE(ratio.low, 8.0 / 6.0);
  EXPECT_LE(ratio.high, 10.0 / 4.0);
  EXPECT_LT(ratio.low, ratio.high);
}

}  // namespace
}  // namespace harness
