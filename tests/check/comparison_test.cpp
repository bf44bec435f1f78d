// How `harness check` compares one metric's repeats in each form (metric_comparison.h), and what
// it makes of configurations that are missing, failing or have nothing to compare
// (comparison.h), on results made in memory.
#include "harness/check/comparison.h"

#include <gtest/gtest.h>

#include <cmath>

#include "harness/check/metric_comparison.h"
#include "harness/common/errors.h"

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

TEST(MetricComparison, ASideWithoutValuesIsMissing) {
  const RepeatValues values = {{0, 1.0}, {1, 1.1}, {2, 1.0}};
  const RepeatValues empty;
  const RepeatValues other_rounds = {{5, 1.0}, {6, 1.0}, {7, 1.0}};
  MetricSides no_baseline;
  no_baseline.current = &values;
  no_baseline.baseline = &empty;
  EXPECT_EQ(compared("reduce_time", no_baseline).verdict, Verdict::kMissing);
  MetricSides no_pairs;
  no_pairs.current = &values;
  no_pairs.current_reference = &other_rounds;
  const CheckRow row = compared("reduce_time", no_pairs);
  EXPECT_EQ(row.verdict, Verdict::kMissing);
  EXPECT_EQ(row.note, "no repeat in common with the reference");
}

// A comm benchmark record of `backend` at one size, `time_us` per reduction (or failed).
PointRecord comm_record(const std::string& backend, int repeat, double time_us, bool ok = true) {
  PointRecord record;
  record.settings.kind = Kind::kComm;
  record.settings.ranks = 2;
  record.settings.backend = backend;
  record.repeat = repeat;
  record.id = "p-" + backend;
  record.status = ok ? PointStatus::kOk : PointStatus::kFailed;
  record.reason = ok ? "" : "rank 1: Killed";
  if (ok) {
    Measurements measurements;
    measurements.kind = Kind::kComm;
    measurements.hosts = {"vm", "vm"};
    measurements.mpi_library = "Open MPI v4.1.4, package: Debian OpenMPI";
    CommMeasurements comm;
    comm.sizes.push_back({4096, time_us, time_us, time_us, 4096 / time_us / 1000, 4096 / time_us / 1000, 0});
    measurements.comm = comm;
    record.measurements = measurements;
  }
  return record;
}

// A results side with one configuration per backend and these records (backend, repeat, time;
// a negative time: failed; a backend listed without records: none).
ResultsSide side_of(const std::string& dir, const std::vector<std::tuple<std::string, int, double>>& records,
                    const std::vector<std::string>& backends) {
  ResultsSide side;
  side.dir = dir;
  side.canonical_dir = dir;
  for (const auto& backend : backends) {
    Configuration configuration;
    configuration.settings.kind = Kind::kComm;
    configuration.settings.ranks = 2;
    configuration.settings.backend = backend;
    configuration.identity = configuration_identity(configuration.settings);
    configuration.match_identity = configuration_identity(configuration.settings, true);
    configuration.first_id = "p-" + backend;
    configuration.label = "comm " + backend;
    side.configurations.push_back(configuration);
  }
  for (const auto& [backend, repeat, time] : records) {
    side.records.push_back(comm_record(backend, repeat, time, time > 0));
    for (auto& configuration : side.configurations) {
      if (configuration.settings.backend != backend) continue;
      (time > 0 ? configuration.ok : configuration.not_ok)[repeat] = &side.records.back();
    }
  }
  return side;
}

CheckOptions against_allreduce() {
  CheckOptions options = default_check_options();
  options.against = read_against(Json::parse(R"({"backend": "allreduce"})"), "--against");
  options.against_where = "--against";
  return options;
}

TEST(Comparison, AReferenceWithoutRecordsIsMissingAndOneNewlyFailingIsARegression) {
  const ResultsSide no_reference = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"allreduce", "ring"});
  CheckReport report = compare_results(no_reference, nullptr, against_allreduce(), true);
  ASSERT_EQ(report.rows.size(), 1U);
  EXPECT_EQ(report.rows[0].verdict, Verdict::kMissing);
  EXPECT_EQ(report.rows[0].note, "the reference p-allreduce has no record");
  EXPECT_EQ(report.exit_status(), kCheckMissing);

  const ResultsSide failing = side_of("now", {{"allreduce", 0, -1}, {"ring", 0, 3}}, {"allreduce", "ring"});
  const ResultsSide before = side_of("then", {{"allreduce", 0, 4}, {"ring", 0, 3}}, {"allreduce", "ring"});
  report = compare_results(failing, &before, against_allreduce(), false);
  ASSERT_EQ(report.rows.size(), 1U);
  EXPECT_EQ(report.rows[0].verdict, Verdict::kRegression);
  EXPECT_EQ(report.rows[0].note, "the reference p-allreduce newly fails: failed (rank 1: Killed)");
  EXPECT_EQ(report.exit_status(), kCheckRegression);
}

TEST(Comparison, NothingToCompareIsAnErrorNotAPass) {
  const ResultsSide only_reference = side_of("now", {{"allreduce", 0, 4}}, {"allreduce"});
  EXPECT_THROW(compare_results(only_reference, nullptr, against_allreduce(), false), ConfigError);
  CheckOptions training_metric = default_check_options();
  select_metrics(training_metric, "step_time");
  EXPECT_THROW(compare_results(only_reference, &only_reference, training_metric, false), ConfigError);
  EXPECT_THROW(compare_results(only_reference, nullptr, default_check_options(), false), ConfigError);
}

TEST(Comparison, AnotherPatchReleaseOfTheMpiLibraryIsComparableAnotherLibraryIsNot) {
  ResultsSide now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  ResultsSide then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  for (auto& record : then.records) record.measurements->mpi_library = "Open MPI v4.1.6, package: Ubuntu";
  CheckReport report = compare_results(now, &then, default_check_options(), true);
  EXPECT_EQ(report.exit_status(), kCheckPass);
  for (auto& record : then.records) record.measurements->mpi_library = "MPICH Version: 4.0.2";
  report = compare_results(now, &then, default_check_options(), true);
  ASSERT_EQ(report.rows.size(), 1U);
  EXPECT_EQ(report.rows[0].verdict, Verdict::kNotComparable);
  EXPECT_NE(report.rows[0].note.find("MPI library \"Open MPI v4.1\" against \"MPICH Version: 4.0\""), std::string::npos)
      << report.rows[0].note;
  EXPECT_EQ(report.exit_status(), kCheckMissing);
}

// The machine every record of `side` ran on.
void ran_on(ResultsSide& side, const MachineFacts& machine) {
  for (auto& record : side.records) record.measurements->machine = machine;
}

TEST(Comparison, ABaselineFromAnotherMachineIsNotComparableUnlessAllowed) {
  const MachineFacts here{"ci-7", "AMD EPYC 7B13", 2, int64_t{24} << 30};
  ResultsSide now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  ResultsSide then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  ran_on(now, here);
  ran_on(then, here);
  EXPECT_EQ(compare_results(now, &then, default_check_options(), true).exit_status(), kCheckPass);

  // The same host name, another CPU: another machine, whatever its name.
  MachineFacts elsewhere = here;
  elsewhere.cpu_model = "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz";
  ran_on(then, elsewhere);
  CheckReport report = compare_results(now, &then, default_check_options(), true);
  ASSERT_EQ(report.rows.size(), 1U);  // one line for the point, not one per metric and size
  EXPECT_EQ(report.rows[0].verdict, Verdict::kNotComparable);
  EXPECT_EQ(report.rows[0].note,
            "another machine: CPU \"AMD EPYC 7B13\" against \"Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz\" "
            "(p-ring against p-ring); --allow-other-machine compares them anyway");
  EXPECT_EQ(report.exit_status(), kCheckMissing);

  CheckOptions allowed = default_check_options();
  allowed.allow_other_machine = true;
  report = compare_results(now, &then, allowed, true);
  EXPECT_EQ(report.exit_status(), kCheckPass);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_NE(report.notes[0].find("compared across machines (--allow-other-machine): ci-7 (AMD EPYC 7B13, 2 CPUs, 24.0 "
                                 "GiB) against ci-7 (Intel(R) Xeon(R)"),
            std::string::npos)
      << report.notes[0];

  // Another host; memory within 2% is the same machine's.
  elsewhere = here;
  elsewhere.memory_bytes = here.memory_bytes - (int64_t{100} << 20);
  ran_on(then, elsewhere);
  EXPECT_EQ(compare_results(now, &then, default_check_options(), true).exit_status(), kCheckPass);
  elsewhere.host = "ci-3";
  ran_on(then, elsewhere);
  report = compare_results(now, &then, default_check_options(), true);
  ASSERT_EQ(report.rows.size(), 1U);
  EXPECT_NE(report.rows[0].note.find("another machine: host ci-7 against ci-3"), std::string::npos) << report.rows[0].note;
}

TEST(Comparison, ABaselineThatDoesNotSayWhereItRanIsComparedWithANote) {
  ResultsSide now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  const ResultsSide then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  ran_on(now, {"ci-7", "AMD EPYC 7B13", 2, int64_t{24} << 30});
  const CheckReport report = compare_results(now, &then, default_check_options(), true);
  EXPECT_EQ(report.exit_status(), kCheckPass);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_EQ(report.notes[0],
            "the baseline's records do not say which machine they ran on (record schema before 7): compared as if "
            "they ran on the same one");
  // Configurations of one run need no such note (an older build's records have no machine)...
  ResultsSide one_run = side_of("now", {{"allreduce", 0, 4}, {"allreduce", 1, 4}, {"allreduce", 2, 4}, {"ring", 0, 3},
                                        {"ring", 1, 3}, {"ring", 2, 3}},
                                {"allreduce", "ring"});
  for (auto& record : one_run.records) {
    if (record.settings.backend == "ring") record.measurements->machine = MachineFacts{"ci-7", "AMD EPYC 7B13", 2, 1};
  }
  EXPECT_TRUE(compare_results(one_run, nullptr, against_allreduce(), true).notes.empty());
  // ... and one run's points on two nodes of a cluster are compared, with a note that says so.
  for (auto& record : one_run.records) {
    if (record.settings.backend == "allreduce") record.measurements->machine = MachineFacts{"node2", "AMD EPYC 7B13", 2, 1};
  }
  const CheckReport across = compare_results(one_run, nullptr, against_allreduce(), true);
  EXPECT_EQ(across.exit_status(), kCheckPass);
  ASSERT_EQ(across.notes.size(), 1U);
  EXPECT_EQ(across.notes[0].rfind("configurations of the current run ran on different machines (ci-7 (", 0), 0U)
      << across.notes[0];
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

}  // namespace
}  // namespace harness
