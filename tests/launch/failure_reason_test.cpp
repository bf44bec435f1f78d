#include "harness/launch/failure_reason.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

ProcessOutcome exited(int code) {
  ProcessOutcome outcome;
  outcome.exited = true;
  outcome.exit_code = code;
  return outcome;
}

TEST(FailureReason, OpenMpiSignalLineNamesTheRankAndSignal) {
  const std::vector<std::string> log = {
      "--------------------------------------------------------------------------",
      "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).",
      "--------------------------------------------------------------------------"};
  EXPECT_EQ(job_failure_reason(exited(137), log, "mpirun"), "rank 1 killed by signal 9 (Killed)");
}

TEST(FailureReason, TheRankProgramsOwnErrorComesFirst) {
  const std::vector<std::string> log = {
      "harness worker (rank 0) progress: epoch 1/3: train loss 0.3, test accuracy 0.5, 0.1 s",
      "harness worker (rank 0): cannot open data file /x.csv",
      "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 15 (Terminated)."};
  EXPECT_EQ(job_failure_reason(exited(1), log, "mpirun"), "rank 0: cannot open data file /x.csv");
}

// srun's words: the first task it reports is the cause; it terminates the others after.
TEST(FailureReason, SrunsFirstTaskLineNamesTheRankAndHost) {
  const std::vector<std::string> log = {"srun: error: hnode2: task 1: Killed",
                                        "srun: launch/slurm: _step_signal: Terminating StepId=43.0",
                                        "srun: error: hnode2: task 0: Terminated"};
  EXPECT_EQ(job_failure_reason(exited(143), log, "srun"), "rank 1 on hnode2: Killed");
}

TEST(FailureReason, OtherwiseTheLauncherAndHowItEnded) {
  EXPECT_EQ(job_failure_reason(exited(3), {"Primary job terminated normally, but 1 process returned"},
                               "mpirun"),
            "mpirun exit code 3");
  ProcessOutcome timed_out;
  timed_out.timed_out = true;
  timed_out.timeout_s = 5;
  EXPECT_EQ(job_failure_reason(timed_out, {"harness worker (rank 0): x"}, "mpirun"), timed_out.describe());
}

}  // namespace
}  // namespace harness
