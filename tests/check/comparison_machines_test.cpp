// `harness check` on results of other machines and MPI libraries (comparison.h): which are
// comparable, and what is said when a baseline does not say where it ran.
#include "harness/check/comparison.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "harness/common/errors.h"
#include "tests/check/results_sides.h"

namespace harness {
namespace {

using namespace check_test;

TEST(Comparison, AnotherPatchReleaseOfTheMpiLibraryIsComparableAnotherLibraryIsNot) {
  ResultsSide now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  ResultsSide then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}}, {"ring"});
  for (auto& record : then.records) record.measurements->mpi_library = "Open MPI v4.1.6, package: Ubuntu";
  CheckReport report = compare_results(now, &then, default_check_options(), true);
  EXPECT_EQ(report.exit_status(), kCheckPass);
  for (auto& record : then.records) record.measurements->mpi_library = "MPICH Version: 4.0.2";
  // Nothing else to compare: the check compared nothing, and says why (not a pass, --strict or not).
  expect_nothing_compared(now, &then, default_check_options(),
                          "nothing compared: no configuration is comparable with its counterpart (1 row(s)); p-ring: "
                          "MPI library \"Open MPI v4.1\" against \"MPICH Version: 4.0\" (p-ring against p-ring)");
  // Beside a configuration that compares, it is a row of its own (exit 4 with --strict).
  ResultsSide both_now = side_of("now", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}, {"ps", 0, 3}, {"ps", 1, 3},
                                         {"ps", 2, 3}}, {"ring", "ps"});
  ResultsSide both_then = side_of("then", {{"ring", 0, 3}, {"ring", 1, 3}, {"ring", 2, 3}, {"ps", 0, 3}, {"ps", 1, 3},
                                           {"ps", 2, 3}}, {"ring", "ps"});
  for (auto& record : both_then.records) {
    if (record.settings.backend == "ring") record.measurements->mpi_library = "MPICH Version: 4.0.2";
  }
  report = compare_results(both_now, &both_then, default_check_options(), true);
  EXPECT_EQ(report.count(Verdict::kNotComparable), 1);
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
  // One line for the point, not one per metric and size; with nothing else compared, that line is
  // the error's (exit 2, --strict or not: a gate that compared nothing has not passed).
  expect_nothing_compared(now, &then, default_check_options(),
                          "nothing compared: no configuration is comparable with its counterpart (1 row(s)); p-ring: "
                          "another machine: CPU \"AMD EPYC 7B13\" against \"Intel(R) Xeon(R) Platinum 8375C CPU @ "
                          "2.90GHz\" (p-ring against p-ring); --allow-other-machine compares them anyway");

  CheckOptions allowed = default_check_options();
  CheckReport report;
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
  try {
    compare_results(now, &then, default_check_options(), true);
    ADD_FAILURE() << "compared records of another host";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("another machine: host ci-7 against ci-3"), std::string::npos) << error.what();
  }
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

}  // namespace
}  // namespace harness
