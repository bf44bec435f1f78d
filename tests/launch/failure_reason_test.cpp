#include "harness/launch/failure_reason.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

// What mpirun says when it cannot start the ranks: Open MPI 4.1's help messages, verbatim. The
// message is in the log's first lines, which may be longer than its tail.
TEST(FailureReason, MpirunsOwnMessageIsQuotedWhenNoRankSaidAnything) {
  const std::string rule(74, '-');
  const std::vector<std::string> slots = {
      rule,
      "There are not enough slots available in the system to satisfy the 3",
      "slots that were requested by the application:",
      "",
      "  hostname",
      "",
      "Either request fewer slots for your application, or make more slots",
      "available for use.",
      rule};
  EXPECT_EQ(job_failure_reason(exited(1), {}, "mpirun", slots),
            "mpirun exit code 1: There are not enough slots available in the system to satisfy the 3 slots that "
            "were requested by the application: hostname");
  const std::vector<std::string> filled = {rule, "All nodes which are allocated for this job are already filled.",
                                           rule};
  EXPECT_EQ(job_failure_reason(exited(1), filled, "mpirun"),
            "mpirun exit code 1: All nodes which are allocated for this job are already filled.");
  // Messages that only say a rank failed are left to the rank's own line, or to the exit code.
  EXPECT_EQ(launcher_message({rule, "Primary job terminated normally, but 1 process returned", rule}), "");
  EXPECT_EQ(job_failure_reason(exited(3), {rule, "Primary job terminated normally, but 1 process returned", rule},
                               "mpirun"),
            "mpirun exit code 3");
  // A long message is cut.
  const std::string long_line(500, 'x');
  EXPECT_LE(launcher_message({rule, long_line, rule}).size(), 300U);
  // A rank's crash report at the head of a log whose tail holds only mpirun's lines.
  const std::vector<std::string> crash_head = {"harness worker (rank 1): SIGSEGV (address not mapped) at 0x0",
                                               "  instruction: libopen-pal.so.40+0x2fe0f"};
  const std::vector<std::string> crash_tail = {
      "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault)."};
  EXPECT_EQ(job_failure_reason(exited(139), crash_tail, "mpirun", crash_head),
            "rank 1: SIGSEGV (address not mapped) at 0x0");
  // mpirun's own one-line refusal, outside a help message.
  EXPECT_EQ(job_failure_reason(exited(1), {"mpirun: Error: unknown option \"--bogus-flag\"", "Type 'mpirun --help'"},
                               "mpirun"),
            "mpirun exit code 1: mpirun: unknown option \"--bogus-flag\"");
  // SLURM's own refusals.
  EXPECT_EQ(launcher_message({"srun: error: Unable to allocate resources: Requested node configuration is not available"}),
            "srun: Unable to allocate resources: Requested node configuration is not available");
}

// Rank 1 of 3 (backend gloo) crashed; its peers then lost their connections to it and said so,
// after its report (a real log, its backtrace cut short). The crash is the cause.
TEST(FailureReason, TheRankThatCrashedIsNamedNotAPeersFollowOnError) {
  const std::string rule(74, '-');
  const std::vector<std::string> log = {
      "harness worker (rank 0) progress: epoch 397/3000: train loss 0.2189, test accuracy 0.6667, 0.020 s",
      "harness worker (rank 1): SIGSEGV (segmentation fault) at address 0x77f4",
      "  instruction: 0x7f9dc2f566e1 (/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13+0xd566e1)",
      "/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f9dbf97a050]",
      rule,
      "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD",
      "with errorcode 1.",
      rule,
      "harness worker (rank 2): gloo allreduce failed: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
      "[127.0.0.1]:4481",
      "harness worker (rank 0): gloo allreduce failed: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
      "[127.0.0.1]:27333",
      rule,
      "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).",
      rule};
  const std::string crashed = "rank 1: SIGSEGV (segmentation fault) at address 0x77f4";
  // The whole log's rank lines (what a job's record reads), or its head and tail.
  const std::vector<std::string> tail(log.begin() + 4, log.end());
  EXPECT_EQ(job_failure_reason(exited(1), tail, "mpirun", {log.begin(), log.begin() + 4}), crashed);
  EXPECT_EQ(job_failure_reason(exited(1), tail, "mpirun", {}, {log[1], log[8], log[9]}), crashed);
  // rank_error_lines reads them from the log file: the rank program's lines, progress left out.
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "harness_failure_reason_test.log";
  {
    std::ofstream out(file);
    for (const std::string& line : log) out << line << "\n";
  }
  EXPECT_EQ(rank_error_lines(file.string()), (std::vector<std::string>{log[1], log[8], log[9]}));
  std::filesystem::remove(file);
  EXPECT_EQ(rank_error_lines(file.string()), std::vector<std::string>{});
  // Even where a peer's error came out first: a crash is never another rank's follow-on.
  EXPECT_EQ(job_failure_reason(exited(1), {}, "mpirun", {}, {log[9], log[1]}), crashed);
  // A rank killed from outside (the OOM killer) leaves no line of its own: mpirun's signal line
  // names it, not the peers that lost it.
  const std::vector<std::string> killed = {
      log[8], log[9], "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."};
  EXPECT_EQ(job_failure_reason(exited(1), killed, "mpirun", {}, {log[8], log[9]}),
            "rank 1 killed by signal 9 (Killed)");
  // srun's words for the same.
  const std::vector<std::string> srun_killed = {log[9], "srun: error: hnode2: task 1: Killed",
                                                "srun: error: hnode1: task 0: Exited with exit code 1"};
  EXPECT_EQ(job_failure_reason(exited(1), srun_killed, "srun", {}, {log[9]}), "rank 1 on hnode2: Killed");
  // A rank that said why before a signal ended it (a library's error, then abort()) is quoted.
  const std::vector<std::string> aborted = {
      log[9], "harness worker (rank 1): NCCL error: unhandled cuda error",
      "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 6 (Aborted)."};
  EXPECT_EQ(job_failure_reason(exited(1), aborted, "mpirun"), "rank 1: NCCL error: unhandled cuda error");
  // Without a crash or a killed rank, the first rank to say why, in the log's order.
  EXPECT_EQ(job_failure_reason(exited(1), {log[9], log[8]}, "mpirun"),
            "rank 0: gloo allreduce failed: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
            "[127.0.0.1]:27333");
}

TEST(FailureReason, TheLauncherIsNamedPastEnv) {
  EXPECT_EQ(launcher_name({"mpirun", "-n", "2", "/opt/harness", "worker"}), "mpirun");
  EXPECT_EQ(launcher_name({"env", "HARNESS_THREADS_PER_RANK=1", "OMP_NUM_THREADS=1", "srun", "--nodes=1"}), "srun");
  EXPECT_EQ(launcher_name({"/usr/bin/env", "A=1", "/usr/bin/srun"}), "srun");
  EXPECT_EQ(launcher_name({"env"}), "job");
  EXPECT_EQ(launcher_name({}), "job");
}

// mpirun could not start its daemon on a host (Open MPI 4.1.4's words after ssh's, verbatim; the
// help message's list of usual causes cut): no rank started, and what ssh said is the reason, not
// the list. An earlier help message (the '_' Open MPI refuses) is not ssh's.
TEST(FailureReason, AHostMpirunCouldNotReachSaysNoRankStartedAndWhatSshSaid) {
  const std::string rule(74, '-');
  const std::vector<std::string> log = {
      rule,
      "While trying to create a regular expression of the node names",
      "used in this application, the regex parser has detected the",
      rule,
      "ssh: Could not resolve hostname nodeb: Name or service not known",
      rule,
      "ORTE was unable to reliably start one or more daemons.",
      "This usually is caused by:",
      "",
      "* not finding the required libraries and/or binaries on",
      rule};
  EXPECT_EQ(job_failure_reason(exited(255), {}, "mpirun", log),
            "mpirun exit code 255: no rank started: mpirun could not start its daemon on every host (the remote "
            "shell said: ssh: Could not resolve hostname nodeb: Name or service not known)");
  const std::vector<std::string> silent = {"Connection timed out during banner exchange",
                                           "Connection to 10.255.255.1 port 22 timed out", rule,
                                           "ORTE was unable to reliably start one or more daemons.", rule};
  EXPECT_EQ(job_failure_reason(exited(255), silent, "mpirun"),
            "mpirun exit code 255: no rank started: mpirun could not start its daemon on every host (the remote "
            "shell said: Connection timed out during banner exchange Connection to 10.255.255.1 port 22 timed out)");
  EXPECT_EQ(job_failure_reason(exited(255), {rule, "ORTE was unable to reliably start one or more daemons.", rule},
                               "mpirun"),
            "mpirun exit code 255: no rank started: mpirun could not start its daemon on every host");
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

TEST(FailureReason, ANearlyFullFileSystemIsSaid) {
  EXPECT_EQ(full_disk_remark("/r/logs", 4096),
            "; the file system of /r/logs has 4 KiB free: what the job wrote there may be cut short");
  EXPECT_EQ(full_disk_remark("/r/logs", 0),
            "; the file system of /r/logs has 0 KiB free: what the job wrote there may be cut short");
  EXPECT_NE(full_disk_remark("/r/logs", 1024 * 1024 - 1), "");
  EXPECT_EQ(full_disk_remark("/r/logs", 1024 * 1024), "");
  // A directory that cannot be asked adds nothing; this test's own has room (a full one would
  // fail far more than this test).
  EXPECT_EQ(full_disk_remark("/no/such/directory"), "");
  EXPECT_EQ(full_disk_remark(std::filesystem::temp_directory_path().string()), "");
}

}  // namespace
}  // namespace harness
