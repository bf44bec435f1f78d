// What `harness check` makes of configurations that are missing, failing or have nothing to
// compare (comparison.h), on results made in memory. Results of other machines and libraries:
// comparison_machines_test.cpp; one metric's repeats compared in each form:
// metric_comparison_test.cpp.
#include "harness/check/comparison.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "harness/check/failing_repeats.h"
#include "harness/common/errors.h"
#include "tests/check/results_sides.h"

namespace harness {
namespace {

using namespace check_test;

TEST(Comparison, AReferenceWithoutRecordsComparesNothingAndOneNewlyFailingIsARegression) {
  const ResultsSide no_reference = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"allreduce", "ring"});
  expect_nothing_compared(no_reference, nullptr, against_allreduce(),
                          "nothing compared: every configuration lacks the records of a side (1 missing row(s))");

  const ResultsSide failing = side_of("now", {{"allreduce", 0, -1}, {"ring", 0, 3}}, {"allreduce", "ring"});
  const ResultsSide before = side_of("then", {{"allreduce", 0, 4}, {"ring", 0, 3}}, {"allreduce", "ring"});
  CheckReport report = compare_results(failing, &before, against_allreduce(), false);
  ASSERT_EQ(report.rows.size(), 1U);
  EXPECT_EQ(report.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(report.rows[0].note, "the reference p-allreduce newly fails: failed (rank 1: Killed)");
  EXPECT_EQ(report.exit_status(), kCheckRegression);

  // A reference that failed in one repeat of four: compared on the others, and said.
  const ResultsSide flaky_reference = side_of(
      "now", {{"allreduce", 0, 3}, {"allreduce", 1, -1}, {"allreduce", 2, 3}, {"allreduce", 3, 3}, {"ring", 0, 3},
              {"ring", 1, 3}, {"ring", 2, 3}, {"ring", 3, 3}},
      {"allreduce", "ring"});
  const CheckReport flaky = compare_results(flaky_reference, nullptr, against_allreduce(), false);
  EXPECT_GT(flaky.count(Verdict::kPass), 0);
  EXPECT_NE(std::find(flaky.notes.begin(), flaky.notes.end(),
                      "the reference p-allreduce failed in 1 of 4 repeat(s), compared without them: failed (rank 1: "
                      "Killed)"),
            flaky.notes.end());
}

TEST(Comparison, NothingToCompareIsAnErrorNotAPass) {
  const ResultsSide only_reference = side_of("now", {{"allreduce", 0, 4}}, {"allreduce"});
  EXPECT_THROW(compare_results(only_reference, nullptr, against_allreduce(), false), ConfigError);
  CheckOptions training_metric = default_check_options();
  select_metrics(training_metric, "step_time");
  expect_nothing_compared(only_reference, &only_reference, training_metric,
                          "nothing compared: no metric of --metrics step_time applies to the points of now");
  EXPECT_THROW(compare_results(only_reference, nullptr, default_check_options(), false), ConfigError);
}

TEST(Comparison, NothingComparedOnEveryPathSaysWhy) {
  const ResultsSide comm = side_of("comm-run", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  // Another kind of run: no configuration of one is in the other.
  ResultsSide training = side_of("training-run", {}, {"ring"});
  training.configurations[0].settings.kind = Kind::kTrain;
  training.configurations[0].settings.workload = "iris_mlp";
  training.configurations[0].identity = configuration_identity(training.configurations[0].settings);
  training.configurations[0].match_identity = configuration_identity(training.configurations[0].settings, true);
  expect_nothing_compared(comm, &training, default_check_options(),
                          "nothing compared: comm-run holds comm points and training-run training points");
  // Every point failed, checked against itself.
  const ResultsSide all_failed = side_of("failed-run", {{"ring", 0, -1}, {"ring", 1, -1}}, {"ring"});
  expect_nothing_compared(all_failed, &all_failed, default_check_options(),
                          "nothing compared: every configuration failed on both sides (1 failing row(s)); none has "
                          "a measurement to compare");
  // A baseline run with another time limit: no configuration has a counterpart (a row for each
  // side's), and the setting that differs says why.
  ResultsSide longer = side_of("longer-run", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  longer.configurations[0].settings.timeout_s = 300;
  longer.configurations[0].identity = configuration_identity(longer.configurations[0].settings);
  longer.configurations[0].match_identity = configuration_identity(longer.configurations[0].settings, true);
  expect_nothing_compared(comm, &longer, default_check_options(),
                          "nothing compared: no configuration of comm-run has a counterpart in longer-run (2 missing "
                          "row(s)); the closest differ in timeout_s (600.0 here, 300.0 in longer-run)");
  // No record of the current run (not run yet), and the baseline has what it lacks.
  const ResultsSide not_run = side_of("empty-run", {}, {"ring"});
  expect_nothing_compared(not_run, &comm, default_check_options(),
                          "nothing compared: every configuration lacks the records of a side (1 missing row(s))");
  // A baseline whose configuration has no ok record, and one failing repeat here too.
  const ResultsSide flaky = side_of("flaky-run", {{"ring", 0, -1}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  expect_nothing_compared(flaky, &all_failed, default_check_options(),
                          "nothing compared: every configuration is missing or failing (1 missing, 1 failing on "
                          "both sides)");
}

TEST(Comparison, AConfigurationThatNowAlwaysFailsIsARegressionWhateverTheBaselineFailed) {
  // The baseline: 4 ok repeats of 5. Now: 0 of 5.
  const ResultsSide flaky = side_of(
      "then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, -1}, {"ring", 3, 3}, {"ring", 4, 3}}, {"ring"});
  const ResultsSide broken = side_of(
      "now", {{"ring", 0, -1}, {"ring", 1, -1}, {"ring", 2, -1}, {"ring", 3, -1}, {"ring", 4, -1}}, {"ring"});
  const CheckReport report = compare_results(broken, &flaky, default_check_options(), false);
  ASSERT_EQ(report.rows.size(), 1U);
  EXPECT_EQ(report.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(report.rows[0].metric, "status");
  EXPECT_EQ(report.rows[0].note,
            "failing in every repeat where the baseline's 4 of 5 were ok: 5 of 5 repeat(s) failed: failed (rank 1: "
            "Killed)");
  EXPECT_EQ(report.exit_status(), kCheckRegression);
}

// `failed` of `repeats` repeats of ring failing (the first ones), the others at 3 us.
ResultsSide ring_failing(const std::string& dir, int failed, int repeats) {
  std::vector<std::tuple<std::string, int, double>> records;
  for (int repeat = 0; repeat < repeats; ++repeat) records.emplace_back("ring", repeat, repeat < failed ? -1 : 3);
  return side_of(dir, records, {"ring"});
}

TEST(Comparison, FailingSignificantlyMoreOftenThanTheBaselineIsARegression) {
  // 8 of 10 failing against 1 of 10: p = 506/184756 (one-sided Fisher exact).
  const ResultsSide then = ring_failing("then", 1, 10);
  CheckReport report = compare_results(ring_failing("now", 8, 10), &then, default_check_options(), false);
  ASSERT_FALSE(report.rows.empty());
  EXPECT_EQ(report.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(report.rows[0].note,
            "failing more often than the baseline (1 of 10 failed there; one-sided Fisher exact p = 0.003): 8 of 10 "
            "repeat(s) failed: failed (rank 1: Killed)");
  EXPECT_EQ(report.exit_status(), kCheckRegression);
  // 2 of 10 against 1 of 10 is within what chance gives: failing on both sides, the metrics compared.
  report = compare_results(ring_failing("now", 2, 10), &then, default_check_options(), false);
  EXPECT_EQ(report.count(Verdict::kRegression), 0);
  EXPECT_EQ(report.count(Verdict::kFailed), 1);
  EXPECT_EQ(report.count(Verdict::kPass), 2);  // busbw and reduce_time at 4 KiB
  EXPECT_EQ(report.exit_status(), kCheckPass);
}

TEST(Comparison, ARepeatWithANanOrNegativeMetricIsAFailedRepeatNotAMissingValue) {
  const ResultsSide nan_now = side_of(
      "now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}, {"ring", 3, std::nan("")}}, {"ring"});
  ASSERT_EQ(nan_now.configurations[0].ok.size(), 3U);
  ASSERT_EQ(nan_now.configurations[0].not_ok.count(3), 1U);
  const ResultsSide then = ring_failing("then", 0, 4);
  const CheckReport report = compare_results(nan_now, &then, default_check_options(), false);
  ASSERT_FALSE(report.rows.empty());
  EXPECT_EQ(report.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(report.rows[0].note,
            "newly failing: 1 of 4 repeat(s) failed: failed (damaged record: busbw at 4 KiB is nan GB/s (expected a "
            "finite number >= 0))");

  // A negative time, as a hand-edited record may hold.
  Configuration configuration;
  PointRecord negative = comm_record("ring", 0, 3);
  negative.measurements->comm->sizes[0].time_us_median = -1000;
  add_record(configuration, 0, negative);
  EXPECT_TRUE(configuration.ok.empty());
  ASSERT_EQ(configuration.not_ok.count(0), 1U);
  EXPECT_EQ(negative.status, PointStatus::kFailed);
  EXPECT_EQ(negative.reason, "damaged record: reduce_time at 4 KiB is -1000 us (expected a finite number >= 0)");
}

TEST(Comparison, ADelayedConfigurationMeetsTheUndelayedOneButNeverItself) {
  ResultsSide now = side_of("now", {}, {"allreduce", "ring"});
  now.configurations[1].settings.inject_comm_delay_us = 300;
  now.configurations[1].identity = configuration_identity(now.configurations[1].settings);
  PointSettings plain_ring = now.configurations[1].settings;
  plain_ring.inject_comm_delay_us = 0;
  // Looked up with another delay: found only where delays may differ.
  EXPECT_EQ(now.find(plain_ring, nullptr, true), &now.configurations[1]);
  EXPECT_EQ(now.find(plain_ring, nullptr, false), nullptr);
  EXPECT_EQ(now.find(now.configurations[1].settings, &now.configurations[1], true), nullptr);
}

TEST(Comparison, ATracedRunMeetsItsUntracedBaseline) {
  ResultsSide now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  const ResultsSide then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  PointSettings traced = now.configurations[0].settings;
  traced.timeline = true;
  traced.loss_every = 7;
  now.configurations[0].settings = traced;
  now.configurations[0].identity = configuration_identity(traced);
  EXPECT_EQ(then.find(traced, nullptr, false), &then.configurations[0]);
  const CheckReport report = compare_results(now, &then, default_check_options(), true);
  EXPECT_EQ(report.exit_status(), kCheckPass);
}

TEST(Comparison, FailuresHeldAgainstASideWithoutRecordsAreMissingNotANewFailure) {
  // The baseline ran ps but not ring, where one repeat fails now.
  const ResultsSide one_failed = side_of("now", {{"ring", 0, -1}, {"ring", 1, 3}, {"ring", 2, 3}, {"ps", 0, 3},
                                                 {"ps", 1, 3}, {"ps", 2, 3}}, {"ring", "ps"});
  const ResultsSide never_ran = side_of("then", {{"ps", 0, 3}, {"ps", 1, 3}, {"ps", 2, 3}}, {"ring", "ps"});
  CheckReport report = compare_results(one_failed, &never_ran, default_check_options(), false);
  EXPECT_EQ(report.count(Verdict::kRegression), 0);
  ASSERT_EQ(report.count(Verdict::kMissing), 1);  // rows[0]: missing comes before pass
  EXPECT_EQ(report.rows[0].note,
            "the baseline has no record to hold this configuration's failures against; here 1 of 3 repeat(s) "
            "failed: failed (rank 1: Killed)");
  EXPECT_EQ(report.exit_status(), kCheckPass);
  // Alone, it compares nothing: an error, not "newly failing" (exit 1).
  expect_nothing_compared(side_of("now", {{"ring", 0, -1}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"}),
                          &never_ran, default_check_options(),
                          "nothing compared: every configuration lacks the records of a side (2 missing row(s))");
  // The same with a reference of the current run that never ran.
  const ResultsSide no_reference = side_of("now", {{"ring", 0, -1}, {"ring", 1, 3}}, {"allreduce", "ring"});
  expect_nothing_compared(no_reference, nullptr, against_allreduce(),
                          "nothing compared: every configuration lacks the records of a side (1 missing row(s))");
  EXPECT_EQ(failing_more({1, 3}, {0, 0}, "the baseline"), "");
}

TEST(Comparison, RepeatsTheSchedulerEndedAreMissingNotFailing) {
  const ResultsSide before = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  // One repeat preempted: compared on the others, with a note; not "newly failing".
  const ResultsSide preempted = side_of("now", {{"ring", 0, kPreempted}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  CheckReport report = compare_results(preempted, &before, default_check_options(), false);
  EXPECT_EQ(report.count(Verdict::kRegression), 0);
  EXPECT_EQ(report.count(Verdict::kMissing), 0);
  EXPECT_GT(report.count(Verdict::kPass) + report.count(Verdict::kInconclusive), 0);
  const std::string note = "p-ring comm ring: compared without the repeat(s) the scheduler ended; 1 repeat(s) ended by "
                           "the scheduler, which count as missing: preempted (job 12 was preempted)";
  EXPECT_NE(std::find(report.notes.begin(), report.notes.end(), note), report.notes.end());
  // Every repeat preempted: nothing to compare, and the reason says so.
  const ResultsSide all_preempted = side_of("now", {{"ring", 0, kPreempted}, {"ring", 1, kPreempted}}, {"ring"});
  expect_nothing_compared(all_preempted, &before, default_check_options(),
                          "nothing compared: every configuration lacks the records of a side (1 missing row(s))");
  const ResultsSide others = side_of("now", {{"ps", 0, 3}, {"ps", 1, 3}, {"ps", 2, 3}}, {"ring", "ps"});
  ResultsSide mixed = side_of("now", {{"ring", 0, kPreempted}, {"ring", 1, kPreempted}, {"ps", 0, 3}, {"ps", 1, 3},
                                      {"ps", 2, 3}}, {"ring", "ps"});
  report = compare_results(mixed, &others, default_check_options(), false);
  ASSERT_EQ(report.rows[0].verdict, Verdict::kMissing);
  EXPECT_EQ(report.rows[0].note, "no ok or failed repeat in the current run; 2 repeat(s) ended by the scheduler, which "
                                 "count as missing: preempted (job 12 was preempted)");
}

TEST(Comparison, ABandwidthChangeWithinTheTimeFloorPasses) {
  // 1.0 us against 1.4 us at 4 KiB: 40% slower, but below reduce_time's floor of 0.5 us; busbw
  // is the same measurement on another scale and passes too, rather than fail the gate alone.
  const ResultsSide then = side_of("then", {{"ring", 0, 1.0}, {"ring", 1, 1.01}, {"ring", 2, 0.99}}, {"ring"});
  const ResultsSide now = side_of("now", {{"ring", 0, 1.4}, {"ring", 1, 1.41}, {"ring", 2, 1.39}}, {"ring"});
  CheckReport report = compare_results(now, &then, default_check_options(), true);
  ASSERT_EQ(report.rows.size(), 2U);
  for (const CheckRow& row : report.rows) EXPECT_EQ(row.verdict, Verdict::kPass) << row.metric << ": " << row.note;
  const auto busbw = std::find_if(report.rows.begin(), report.rows.end(), [](const CheckRow& r) { return r.metric == "busbw"; });
  ASSERT_NE(busbw, report.rows.end());
  EXPECT_NE(busbw->note.find(" us, below reduce_time's floor of 0.5 us"), std::string::npos) << busbw->note;
  // Beyond the floor (10 us against 14 us), both regress.
  const ResultsSide slow_then = side_of("then", {{"ring", 0, 10}, {"ring", 1, 10.1}, {"ring", 2, 9.9}}, {"ring"});
  const ResultsSide slow_now = side_of("now", {{"ring", 0, 14}, {"ring", 1, 14.1}, {"ring", 2, 13.9}}, {"ring"});
  EXPECT_EQ(compare_results(slow_now, &slow_then, default_check_options(), true).count(Verdict::kRegression), 2);
}

}  // namespace
}  // namespace harness
