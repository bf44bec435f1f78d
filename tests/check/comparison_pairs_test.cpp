// `harness check` on the pairs of one run (--against, as the two-build gate compares head with
// base): a failing or wrong-summing candidate is a regression in one run; pairs must share their
// nodes, and every record's machine counts; what the two sides ran differently is said.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/check/comparison.h"
#include "harness/check/expected_commits.h"
#include "harness/common/errors.h"
#include "tests/check/results_sides.h"

namespace harness {
namespace {

using namespace check_test;

// allreduce (the reference) and ring, 4 repeats each, in the order a two-build run records them:
// ring second in repeats 1 and 3, first in 2 and 4.
ResultsSide four_pairs() {
  ResultsSide side = side_of("now",
                             {{"allreduce", 0, 4}, {"ring", 0, 4}, {"ring", 1, 4}, {"allreduce", 1, 4},
                              {"allreduce", 2, 4}, {"ring", 2, 4}, {"ring", 3, 4}, {"allreduce", 3, 4}},
                             {"allreduce", "ring"});
  for (std::size_t i = 0; i < side.records.size(); ++i) {
    side.records[i].index = static_cast<int>(i);
    side.records[i].id = fmt::format("p{:03}-{}", i, side.records[i].settings.backend);
  }
  return side;
}

PointRecord& record_of(ResultsSide& side, const std::string& backend, int repeat) {
  for (auto& record : side.records) {
    if (record.settings.backend == backend && record.repeat == repeat) return record;
  }
  throw std::logic_error("no such record");
}

const CheckRow* row_with(const CheckReport& report, const std::string& metric) {
  const auto found = std::find_if(report.rows.begin(), report.rows.end(),
                                  [&metric](const CheckRow& row) { return row.metric == metric; });
  return found == report.rows.end() ? nullptr : &*found;
}

TEST(ComparisonPairs, OneFailedRepeatOfFourIsARegressionInOneRun) {
  ResultsSide side = side_of("now",
                             {{"allreduce", 0, 4}, {"ring", 0, 4}, {"allreduce", 1, 4}, {"ring", 1, -1},
                              {"allreduce", 2, 4}, {"ring", 2, 4}, {"allreduce", 3, 4}, {"ring", 3, 4}},
                             {"allreduce", "ring"});
  const CheckReport report = compare_results(side, nullptr, against_allreduce(), true);
  EXPECT_EQ(report.exit_status(), kCheckRegression);
  const CheckRow* status = row_with(report, "status");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->verdict, Verdict::kRegression);
  EXPECT_NE(status->note.find("failing where its reference does not: 1 of 4 repeat(s) failed"), std::string::npos)
      << status->note;
}

TEST(ComparisonPairs, SummingWrongWhereTheReferenceDoesNotIsARegressionInOneRun) {
  ResultsSide side = four_pairs();
  record_of(side, "ring", 2).measurements->comm->sizes[0].wrong = 3;
  CheckReport report = compare_results(side, nullptr, against_allreduce(), true);
  EXPECT_EQ(report.exit_status(), kCheckRegression);
  const CheckRow* wrong = row_with(report, "wrong");
  ASSERT_NE(wrong, nullptr);
  EXPECT_EQ(wrong->verdict, Verdict::kRegression);
  EXPECT_EQ(wrong->note, "summing wrong where its reference does not: #wrong 3 from 4 KiB in 1 of 4 repeat(s)");
  // The timings are compared all the same (equal here).
  EXPECT_NE(row_with(report, "reduce_time"), nullptr);

  // Wrong on both sides: the machine or MPI, not the change (a failure row, exit 4 under --strict).
  record_of(side, "allreduce", 0).measurements->comm->sizes[0].wrong = 1;
  report = compare_results(side, nullptr, against_allreduce(), true);
  wrong = row_with(report, "wrong");
  ASSERT_NE(wrong, nullptr);
  EXPECT_EQ(wrong->verdict, Verdict::kFailed);
  EXPECT_EQ(report.exit_status(), kCheckMissing);
}

// A pair split over two nodes (a cluster placed its two jobs) is left out, and said to be; the
// other pairs are compared. Split in every repeat, the configuration is not comparable.
TEST(ComparisonPairs, APairOnTwoNodesIsLeftOutAndTheOthersCompared) {
  ResultsSide side = four_pairs();
  record_of(side, "ring", 1).measurements->hosts = {"node2", "node2"};
  record_of(side, "ring", 1).measurements->comm->sizes[0].time_us_median = 400;  // it would be a regression
  CheckReport report = compare_results(side, nullptr, against_allreduce(), true);
  EXPECT_EQ(report.exit_status(), kCheckPass);
  const CheckRow* time = row_with(report, "reduce_time");
  ASSERT_NE(time, nullptr);
  EXPECT_EQ(time->current_repeats, 3);
  // (The 3 pairs left are unbalanced too, ring second in 2: a note of its own.)
  ASSERT_EQ(report.notes.size(), 2U);
  EXPECT_NE(report.notes[1].find("ran after its reference in 2 of 3 repeats"), std::string::npos) << report.notes[1];
  EXPECT_EQ(report.notes[0],
            "p-ring comm ring: left out of the comparison, the two points of a pair ran on different nodes: repeat 2 "
            "ran on node2 (p002-ring), its reference on vm (p003-allreduce)");
  // With --allow-other-machine it is compared, and said to be.
  CheckOptions allowed = against_allreduce();
  allowed.allow_other_machine = true;
  report = compare_results(side, nullptr, allowed, true);
  EXPECT_EQ(row_with(report, "reduce_time")->current_repeats, 4);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_NE(report.notes[0].find("compared across nodes (--allow-other-machine)"), std::string::npos);
  // A node's full name is the short one MPI gives its ranks.
  record_of(side, "ring", 1).measurements->hosts = {"vm.cluster.example", "vm.cluster.example"};
  EXPECT_TRUE(compare_results(side, nullptr, against_allreduce(), true).notes.empty());

  for (auto& record : side.records) {
    if (record.settings.backend == "ring") record.measurements->hosts = {"node2", "node2"};
  }
  try {
    compare_results(side, nullptr, against_allreduce(), true);
    ADD_FAILURE() << "compared pairs that were all split";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("another node in every repeat: repeat 1 ran on node2"), std::string::npos)
        << error.what();
  }
}

// A failed cluster job says only the node its script ran on (launch.host): on another node than
// its pair, its failure says nothing of the code, and the pair is left out.
TEST(ComparisonPairs, APointFailingOnAnotherNodeIsNotComparableNotARegression) {
  ResultsSide side = side_of("now",
                             {{"allreduce", 0, 4}, {"ring", 0, 4}, {"allreduce", 1, 4}, {"ring", 1, -1},
                              {"allreduce", 2, 4}, {"ring", 2, 4}, {"allreduce", 3, 4}, {"ring", 3, 4}},
                             {"allreduce", "ring"});
  record_of(side, "ring", 1).launch.host = "node2";
  CheckReport report = compare_results(side, nullptr, against_allreduce(), true);
  EXPECT_EQ(report.count(Verdict::kRegression), 0);
  EXPECT_EQ(row_with(report, "status"), nullptr);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_NE(report.notes[0].find("repeat 2 ran on node2 (p-ring), its reference on vm (p-allreduce)"), std::string::npos)
      << report.notes[0];
  // On its pair's node (its script's full host name, MPI's short one), it is the regression it was.
  record_of(side, "ring", 1).launch.host = "vm.cluster.example";
  EXPECT_EQ(compare_results(side, nullptr, against_allreduce(), true).exit_status(), kCheckRegression);
}

TEST(ComparisonPairs, EveryRecordsMachineCountsNotOnlyTheFirst) {
  const MachineFacts here{"ci-7", "AMD EPYC 7B13", 2, int64_t{24} << 30};
  ResultsSide now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  ResultsSide then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  for (auto* side : {&now, &then}) {
    for (auto& record : side->records) record.measurements->machine = here;
  }
  MachineFacts elsewhere = here;
  elsewhere.host = "ci-3";
  then.records.back().measurements->machine = elsewhere;  // the last repeat only
  try {
    compare_results(now, &then, default_check_options(), true);
    ADD_FAILURE() << "compared records of which one ran on another host";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("another machine: host ci-7 against ci-3"), std::string::npos)
        << error.what();
  }
  // A failing repeat that wrote where it ran before it stopped: on another machine than the
  // baseline, not comparable rather than newly failing.
  then.records.back().measurements->machine = here;
  ResultsSide failing = side_of("now", {{"ring", 0, 3}, {"ring", 1, -1}, {"ring", 2, 3}}, {"ring"});
  for (auto& record : failing.records) {
    if (record.ok()) record.measurements->machine = here;  // only the failed repeat says "elsewhere"
  }
  Measurements partial;
  partial.machine = elsewhere;
  failing.records[1].partial_measurements = partial;
  try {
    compare_results(failing, &then, default_check_options(), true);
    ADD_FAILURE() << "judged a failure on another machine";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("another machine: host ci-3 against ci-7"), std::string::npos)
        << error.what();
  }
}

TEST(ComparisonPairs, SettingsTheBuildsRanDifferentlyAreNamed) {
  ResultsSide side = four_pairs();
  for (auto& record : side.records) {
    record.build = BuildProvenance{record.settings.backend == "ring" ? "head" : "base", "/b", "0.3.0", "abc", ""};
    record.build->settings = {{"backend", record.settings.backend}, {"bucket_mb", 25}, {"comm_iterations", 20}};
    if (record.settings.backend == "ring") record.build->settings["comm_iterations"] = 10;
  }
  const CheckReport report = compare_results(side, nullptr, against_allreduce(), true);
  ASSERT_EQ(report.notes.size(), 1U);
  // The backend differs on purpose (--against's key): not news.
  EXPECT_EQ(report.notes[0],
            "p-ring comm ring ran with other settings than its reference p-allreduce (a build's own defaults where "
            "the experiment sets none): comm_iterations 10 against 20");
}

TEST(ComparisonPairs, AnUnbalancedOrderOfThePairsIsNoted) {
  ResultsSide side = four_pairs();  // ring second in 2 of 4 pairs: balanced
  EXPECT_TRUE(compare_results(side, nullptr, against_allreduce(), true).notes.empty());
  record_of(side, "ring", 1).index = 9;  // now second in 3 of 4
  const CheckReport report = compare_results(side, nullptr, against_allreduce(), true);
  ASSERT_EQ(report.notes.size(), 1U);
  EXPECT_NE(report.notes[0].find("p-ring comm ring ran after its reference in 3 of 4 repeats"), std::string::npos)
      << report.notes[0];
}

TEST(ComparisonPairs, ABuildsRecordsMustNameTheExpectedCommit) {
  ResultsSide side = four_pairs();
  for (auto& record : side.records) {
    const bool base = record.settings.backend == "allreduce";
    record.settings.build = base ? "base" : "head";
    record.build = BuildProvenance{record.settings.build, "/b", "0.3.0", base ? "e72dc4e4ecac" : "10705f8abcde", ""};
  }
  EXPECT_NO_THROW(check_expected_commit(side, read_expected_commit("base=e72dc4e4ecac852f4f7787ab9296b4a51ab4a649")));
  EXPECT_NO_THROW(check_expected_commit(side, read_expected_commit("base=e72dc4e")));
  try {
    check_expected_commit(side, read_expected_commit("base=10705f8"));
    ADD_FAILURE() << "accepted another commit";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--expect-commit base=10705f8: 4 of 4 record(s) of build base in now ran another build: e72dc4e4ecac "
              "(p000-allreduce.json), expected commit 10705f8");
  }
  record_of(side, "allreduce", 2).build->commit = "e72dc4e4ecac-dirty";
  EXPECT_THROW(check_expected_commit(side, read_expected_commit("base=e72dc4e")), ConfigError);
  EXPECT_THROW(check_expected_commit(side, read_expected_commit("other=e72dc4e")), ConfigError);
  EXPECT_THROW(read_expected_commit("base=E72DC4E"), ConfigError);
  EXPECT_THROW(read_expected_commit("base"), ConfigError);
}

}  // namespace
}  // namespace harness
