// How `harness check` compares one metric's repeats in each form (metric_comparison.h): against
// a reference, against a reference and a baseline (their ratios), zeros, and a side without values.
#include "harness/check/metric_comparison.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

const CheckMetric& metric(std::string_view name) { return find_check_metric(name, "test"); }

CheckRow compared(const char* name, const MetricSides& sides, MetricLimits limits = {0.10, 0}) {
  CheckRow row;
  row.metric = name;
  EXPECT_TRUE(compare_metric_values(metric(name), limits, sides, row));
  return row;
}

TEST(MetricComparison, AgainstAReferencePairsTheRepeatsOfOneRun) {
  // The candidate is 30% slower than the reference in every round, though the rounds drift.
  const RepeatValues candidate = {{0, 13}, {1, 26}, {2, 19.5}};
  const RepeatValues reference = {{0, 10}, {1, 20}, {2, 15}};
  MetricSides sides;
  sides.current = &candidate;
  sides.current_reference = &reference;
  const CheckRow row = compared("reduce_time", sides);
  EXPECT_TRUE(row.paired);
  EXPECT_NEAR(*row.change, 0.30, 1e-9);
  EXPECT_NEAR(*row.change_low, 0.30, 1e-9);  // no spread in the ratios
  EXPECT_EQ(row.verdict, Verdict::kRegression);
  // Unpaired, the drift between rounds would swamp it.
  MetricSides unpaired;
  unpaired.current = &candidate;
  unpaired.baseline = &reference;
  EXPECT_EQ(compared("reduce_time", unpaired).verdict, Verdict::kInconclusive);
}

TEST(MetricComparison, AgainstAReferenceAndABaselineComparesTheRatios) {
  // Now the candidate takes 1.3x the reference; in the baseline (a machine twice as slow) 1.0x.
  const RepeatValues now = {{0, 13}, {1, 13.1}, {2, 12.9}};
  const RepeatValues now_reference = {{0, 10}, {1, 10}, {2, 10}};
  const RepeatValues then = {{0, 20}, {1, 20.2}, {2, 19.8}};
  const RepeatValues then_reference = {{0, 20}, {1, 20}, {2, 20}};
  MetricSides sides{&now, &now_reference, &then, &then_reference, false};
  const CheckRow row = compared("reduce_time", sides);
  EXPECT_FALSE(row.paired);
  EXPECT_NEAR(*row.change, 0.30, 0.01);
  EXPECT_NEAR(*row.baseline, 10, 0.05);  // the reference now, at the baseline's ratio
  EXPECT_NEAR(*row.current, 13, 0.05);
  EXPECT_EQ(row.verdict, Verdict::kRegression);
  // Only the machine changed: no regression, though every time doubled.
  const RepeatValues now_same = {{0, 10}, {1, 10.1}, {2, 9.9}};
  MetricSides same{&now_same, &now_reference, &then, &then_reference, false};
  EXPECT_EQ(compared("reduce_time", same).verdict, Verdict::kPass);
}

TEST(MetricComparison, ZerosAreComparedAsDifferencesNotDropped) {
  // Communication fully hidden in the baseline, 5 ms exposed now.
  const RepeatValues now = {{0, 5.0}, {1, 5.2}, {2, 4.9}};
  const RepeatValues then = {{0, 0.0}, {1, 0.0}, {2, 0.0}};
  MetricSides sides;
  sides.current = &now;
  sides.baseline = &then;
  const CheckRow row = compared("exposed_comm", sides, {0.10, 0.02});
  EXPECT_EQ(row.verdict, Verdict::kRegression);
  EXPECT_FALSE(row.change.has_value());  // no ratio to 0
  EXPECT_NEAR(*row.current, 5.0333, 1e-3);
  EXPECT_EQ(*row.baseline, 0);
  EXPECT_EQ(row.note, "compared as a difference: a value of 0 has no ratio");
  // Zeros everywhere (one rank: no communication): the metric does not apply.
  MetricSides zeros;
  zeros.current = &then;
  zeros.baseline = &then;
  CheckRow none;
  EXPECT_FALSE(compare_metric_values(metric("exposed_comm"), {0.10, 0.02}, zeros, none));
}

TEST(MetricComparison, AZeroAgainstAReferenceAndABaselineComparesTheGapsAsDifferences) {
  // Overlap hid the candidate's communication in one repeat of the baseline: the candidate's gap
  // to its reference (in ms) is compared between the runs, not refused for want of a ratio.
  const RepeatValues now = {{0, 3.0}, {1, 3.1}, {2, 2.9}};
  const RepeatValues now_reference = {{0, 1.0}, {1, 1.0}, {2, 1.0}};
  const RepeatValues then = {{0, 0.0}, {1, 1.1}, {2, 0.9}};
  const RepeatValues then_reference = {{0, 1.0}, {1, 1.0}, {2, 1.0}};
  MetricSides sides{&now, &now_reference, &then, &then_reference, false};
  const CheckRow row = compared("exposed_comm", sides, {0.10, 0.02});
  EXPECT_EQ(row.verdict, Verdict::kRegression) << row.note;
  EXPECT_EQ(row.note, "compared as a difference: a value of 0 has no ratio");
  EXPECT_NEAR(*row.current, 3.0, 1e-9);
  EXPECT_NEAR(*row.baseline, 1.0 + (-1.0 + 0.1 - 0.1) / 3, 1e-9);  // the reference now, plus the baseline's gap
}

// One rank exchanges nothing: its communication metrics are 0 (no row), whatever the backend's
// empty call took; its step time still counts.
TEST(MetricComparison, OneRanksCommunicationIsNoMetric) {
  Measurements measurements;
  TrainMeasurements train;
  train.steps.step_s = {0.010, 0.011, 0.012};
  train.steps.compute_s = {0.010, 0.011, 0.012};
  train.steps.comm_s = {1e-7, 1e-7, 2e-7};
  train.steps.exposed_comm_s = {1e-7, 1e-7, 2e-7};
  measurements.train = train;
  measurements.world_size = 1;
  for (const char* name : {"comm_time", "exposed_comm", "comm_fraction"}) {
    ASSERT_EQ(metric_values(metric(name), measurements).size(), 1U);
    EXPECT_EQ(metric_values(metric(name), measurements)[0].value, 0) << name;
  }
  EXPECT_NEAR(metric_values(metric("step_time"), measurements)[0].value, 11, 1e-9);
  measurements.world_size = 2;
  EXPECT_NEAR(metric_values(metric("comm_time"), measurements)[0].value, 1e-4, 1e-12);
}

// Time to accuracy (lower is better) is a value only where the run reached its target: a point
// without one, or one that missed it, gives none.
TEST(MetricComparison, TimeToTargetIsAValueOnlyWhereTheTargetWasReached) {
  EXPECT_EQ(metric("time_to_target").better, Better::kLower);
  Measurements measurements;
  measurements.train = TrainMeasurements{};
  EXPECT_TRUE(metric_values(metric("time_to_target"), measurements).empty());
  measurements.train->time_to_target = TargetReached{};
  EXPECT_TRUE(metric_values(metric("time_to_target"), measurements).empty());
  measurements.train->time_to_target = TargetReached{true, 4.25, 3, 300};
  ASSERT_EQ(metric_values(metric("time_to_target"), measurements).size(), 1U);
  EXPECT_EQ(metric_values(metric("time_to_target"), measurements)[0].value, 4.25);
}

TEST(MetricComparison, ASideWithoutValuesIsMissing) {
  const RepeatValues values = {{0, 1.0}, {1, 1.1}, {2, 1.0}};
  const RepeatValues empty;
  const RepeatValues other_rounds = {{5, 1.0}, {6, 1.0}, {7, 1.0}};
  MetricSides no_baseline;
  no_baseline.current = &values;
  no_baseline.baseline = &empty;
  EXPECT_EQ(compared("reduce_time", no_baseline).verdict, Verdict::kMissing);
  // Rounds that failed on one side or the other leave no pair: compared unpaired when each side
  // has enough repeats of its own, missing when not.
  MetricSides no_pairs;
  no_pairs.current = &values;
  no_pairs.current_reference = &other_rounds;
  const CheckRow row = compared("reduce_time", no_pairs);
  EXPECT_EQ(row.verdict, Verdict::kPass) << row.note;
  EXPECT_FALSE(row.paired);
  EXPECT_EQ(row.note, "unpaired: 0 repeat(s) in common with the reference");
  const RepeatValues two_rounds = {{5, 1.0}, {6, 1.0}};
  MetricSides too_few;
  too_few.current = &values;
  too_few.current_reference = &two_rounds;
  const CheckRow few = compared("reduce_time", too_few);
  EXPECT_EQ(few.verdict, Verdict::kMissing);
  EXPECT_EQ(few.note, "no repeat in common with the reference");
  // Slower in every repeat, with the rounds of each side failing where the other's did not.
  const RepeatValues slower = {{1, 2.0}, {3, 2.1}, {4, 1.9}};
  const RepeatValues reference = {{0, 1.0}, {2, 1.05}, {5, 0.95}};
  MetricSides disjoint;
  disjoint.current = &slower;
  disjoint.current_reference = &reference;
  const CheckRow regressed = compared("reduce_time", disjoint);
  EXPECT_EQ(regressed.verdict, Verdict::kRegression) << regressed.note;
  EXPECT_EQ(regressed.note, "unpaired: 0 repeat(s) in common with the reference");
}

}  // namespace
}  // namespace harness
