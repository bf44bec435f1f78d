// End to end: the SLURM jobs a harness submits stay its own and stay tracked, against fake SLURM
// commands first on PATH (bash scripts keeping their jobs in files), so that each hostile moment
// can be staged exactly: an sbatch that kills the harness after queueing, one that queues and
// then hangs, a scancel that fails, a hang-up, a pack cancelled halfway.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "e2e_helpers.h"
#include "fake_slurm.h"
#include "harness/common/clock.h"
#include "harness/common/files.h"
#include "harness/common/json.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

constexpr const char* kPerPoint = R"({"name": "slurm", "mode": "per-point", "start_ranks_with": "mpirun"})";

TEST(SlurmOwnership, OptionsTheHarnessOwnsAndUnboundedLimitsAreRefusedBeforeAnySbatch) {
  FakeCluster cluster = fake_cluster(
      "owned", R"({"name": "slurm", "mode": "per-point", "start_ranks_with": "mpirun", "sbatch": ["--job-name=mine"]})");
  const HarnessRun owned = cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string()}, "1.log");
  EXPECT_EQ(owned.outcome.exit_code, 2) << joined(owned.output);
  ASSERT_EQ(owned.output.size(), 1U) << joined(owned.output);
  EXPECT_NE(owned.output[0].find("launcher.sbatch[0]: \"--job-name=mine\" is set by the harness on every job"),
            std::string::npos) << owned.output[0];
  EXPECT_EQ(cluster.sbatch_calls(), 0);

  FakeCluster plain = fake_cluster("time", kPerPoint);
  const HarnessRun huge = plain.harness(
      {"run", plain.experiment.string(), "--out", plain.out.string(), "--set", "timeout_s=2e11"}, "2.log");
  EXPECT_EQ(huge.outcome.exit_code, 2) << joined(huge.output);
  ASSERT_EQ(huge.output.size(), 1U) << joined(huge.output);
  EXPECT_NE(huge.output[0].find("timeout_s: expected a positive number of seconds up to 31536000 (365 days)"),
            std::string::npos) << huge.output[0];
  EXPECT_EQ(plain.sbatch_calls(), 0);
}

TEST(SlurmOwnership, EachJobIsInTheLedgerBeforeTheNextSbatch) {
  FakeCluster cluster = fake_cluster("ledger", kPerPoint);
  // The second sbatch queues its job and kills the harness before it hears the id.
  std::ofstream(cluster.state / "mode_2") << "kill";
  const HarnessRun killed = cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string()},
                                            "1.log");
  EXPECT_FALSE(killed.outcome.exited) << joined(killed.output);
  EXPECT_EQ(cluster.sbatch_calls(), 2);
  // The first job was in the ledger when the second sbatch ran, and still is.
  EXPECT_NE(cluster.text("ledger_at_call_2.json").find("\"per-point:1001\""), std::string::npos)
      << cluster.text("ledger_at_call_2.json");
  EXPECT_EQ(cluster.ledger_jobs(), (std::vector<std::string>{"per-point:1001"}));
  // A resumed run follows it instead of submitting its point again.
  const HarnessRun resumed = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "2.log");
  EXPECT_NE(joined(resumed.output).find("submitted earlier"), std::string::npos) << joined(resumed.output);
  EXPECT_EQ(cluster.sbatch_calls(), 4);
  EXPECT_EQ(cluster.ledger_jobs().size(), 3U) << cluster.ledger().dump(1);
  // The point submitted twice (its first job unknown to the harness) has two status files of its own.
  const std::string first = cluster.text("script_1002.sh");
  const std::string again = cluster.text("script_1003.sh");
  const auto status_id = [](const std::string& script) {
    const auto at = script.find("run_point '");
    return at == std::string::npos ? "" : script.substr(at + 11, script.find('\'', at + 11) - at - 11);
  };
  EXPECT_EQ(status_id(first).rfind("p001-", 0), 0U) << first;
  EXPECT_EQ(status_id(again).rfind("p001-", 0), 0U) << again;
  EXPECT_NE(status_id(first), status_id(again));
}

TEST(SlurmOwnership, AnSbatchThatGivesNoAnswerIsLookedUpByNameAndNotSubmittedTwice) {
  FakeCluster cluster = fake_cluster("timeout", kPerPoint, 2);
  cluster.environment.emplace_back("HARNESS_SBATCH_TIMEOUT_S", "1");
  std::ofstream(cluster.state / "mode_1") << "hang";           // queued, then no answer
  std::ofstream(cluster.state / "mode_2") << "hang-unqueued";  // no answer, nothing queued
  const HarnessRun run = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log");
  const std::string text = joined(run.output);
  EXPECT_EQ(cluster.sbatch_calls(), 2) << text;
  EXPECT_EQ(cluster.ledger_jobs(), (std::vector<std::string>{"per-point:1001"})) << text;
  EXPECT_NE(text.find("gave no answer within 1 s (HARNESS_SBATCH_TIMEOUT_S), and squeue --name=harness-"),
            std::string::npos) << text;
  EXPECT_NE(text.find("lists no job of it: not submitted"), std::string::npos) << text;
  // Had sbatch queued the second job after all, later: it runs nothing (and writes no status).
  // The first, found in time, has no such marker.
  std::vector<fs::path> markers;
  for (const auto& entry : fs::directory_iterator(cluster.out / "jobs" / "status")) {
    if (entry.path().extension() == ".abandoned") markers.push_back(entry.path());
  }
  ASSERT_EQ(markers.size(), 1U) << text;
  EXPECT_EQ(markers[0].filename().string().rfind("p001-", 0), 0U) << markers[0];
  fs::path script;
  for (const auto& entry : fs::directory_iterator(cluster.out / "jobs" / "scripts")) {
    if (entry.path().filename().string().rfind("p001-", 0) == 0) script = entry.path();
  }
  ASSERT_FALSE(script.empty());
  ProcessRequest late_job;
  late_job.argv = {"bash", script.string()};
  late_job.timeout_s = 30;
  const CapturedRun late = run_captured(late_job);
  EXPECT_TRUE(late.outcome.ok()) << late.outcome.describe() << "\n" << late.output;
  EXPECT_NE(late.output.find("harness gave up on this job's sbatch, so it runs nothing"), std::string::npos)
      << late.output;
  for (const auto& entry : fs::directory_iterator(cluster.out / "jobs" / "status")) {
    EXPECT_NE(entry.path().extension(), ".status") << entry.path() << " written by a job that should run nothing";
  }
}

// A run refused for another launcher's jobs in flight changes nothing in the directory: `harness
// status` reads the experiment copy to tell which jobs are still the sweep's, and would cancel
// the ones a refused run's sweep left out.
TEST(SlurmOwnership, ARunRefusedForAnotherLaunchersJobsLeavesTheDirectoryAsItWas) {
  FakeCluster cluster = fake_cluster("other_launcher", kPerPoint, 2);
  ASSERT_TRUE(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                  .outcome.exited);
  ASSERT_EQ(cluster.ledger_jobs().size(), 2U);
  const std::string before = read_text(cluster.out / "experiment.json");
  const HarnessRun refused = cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(),
                                              "--launcher", "local", "--sweep", R"({"seed": [1, 2]})"},
                                             "2.log");
  EXPECT_EQ(refused.outcome.exit_code, 2) << joined(refused.output);
  EXPECT_NE(joined(refused.output).find("have jobs in flight through the slurm launcher"), std::string::npos)
      << joined(refused.output);
  EXPECT_EQ(read_text(cluster.out / "experiment.json"), before);
  const HarnessRun status = cluster.harness({"status", cluster.out.string()}, "3.log");
  EXPECT_EQ(status.outcome.exit_code, 3) << joined(status.output);  // the two jobs still in flight
  EXPECT_NE(joined(status.output).find("2 in flight"), std::string::npos) << joined(status.output);
  EXPECT_EQ(joined(status.output).find("no longer in the experiment"), std::string::npos) << joined(status.output);
  EXPECT_EQ(cluster.ledger_jobs().size(), 2U);
  EXPECT_TRUE(cluster.text("scancel_calls").empty()) << cluster.text("scancel_calls");
}

TEST(SlurmOwnership, AJobScancelCouldNotStopStaysInTheLedger) {
  FakeCluster cluster = fake_cluster("scancel", kPerPoint, 2);
  ASSERT_EQ(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                .outcome.exited,
            true);
  ASSERT_EQ(cluster.ledger_jobs().size(), 2U);
  std::ofstream(cluster.state / "scancel_fails") << "";
  const HarnessRun failed = cluster.harness({"cancel", cluster.out.string()}, "2.log");
  EXPECT_NE(failed.outcome.exit_code, 0) << explained(failed);
  EXPECT_NE(joined(failed.output).find("Unable to contact slurm controller"), std::string::npos)
      << joined(failed.output);
  EXPECT_NE(joined(failed.output).find("2 of 2 job(s) could not be cancelled"), std::string::npos)
      << joined(failed.output);
  EXPECT_EQ(cluster.ledger_jobs().size(), 2U);
  fs::remove(cluster.state / "scancel_fails");
  const HarnessRun cancelled = cluster.harness({"cancel", cluster.out.string()}, "3.log");
  EXPECT_EQ(cancelled.outcome.exit_code, 0) << explained(cancelled);
  EXPECT_TRUE(cluster.ledger_jobs().empty());
  EXPECT_EQ(cluster.text("cancelled"), "1001\n1002\n");
}

TEST(SlurmOwnership, AHangUpCancelsTheJobsInFlightLikeCtrlC) {
  // As in a terminal: a harness started with hang-ups ignored (these tests under nohup) keeps going
  // on purpose, so the harness here inherits the default.
  ::signal(SIGHUP, SIG_DFL);
  FakeCluster cluster = fake_cluster("hangup", kPerPoint, 2);
  ChildProcess harness(harness_request({"run", cluster.experiment.string(), "--out", cluster.out.string()},
                                       cluster.dir / "run.log", cluster.environment));
  const auto start = Clock::now();
  while (cluster.sbatch_calls() < 2 || read_text(cluster.out / "jobs" / "ledger.json").find("1002") == std::string::npos) {
    ASSERT_LT(seconds_since(start), 60) << read_text(cluster.dir / "run.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(harness.pid(), SIGHUP);
  std::optional<ProcessOutcome> ended;
  while (!(ended = harness.poll())) {
    ASSERT_LT(seconds_since(start), 60) << read_text(cluster.dir / "run.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(ended->exit_code, 130) << read_text(cluster.dir / "run.log");
  EXPECT_EQ(cluster.text("scancel_calls"), "1001 1002\n");
  EXPECT_TRUE(cluster.ledger_jobs().empty());
}

// `nohup harness run ...`: a hang-up the caller ignores stays ignored, and the jobs go on.
TEST(SlurmOwnership, AHangUpUnderNohupIsIgnored) {
  FakeCluster cluster = fake_cluster("nohup", kPerPoint, 2);
  ProcessRequest request = harness_request({"run", cluster.experiment.string(), "--out", cluster.out.string()},
                                           cluster.dir / "run.log", cluster.environment);
  request.argv.insert(request.argv.begin(), {"bash", "-c", "trap '' HUP; exec \"$@\"", "nohup-like"});
  ChildProcess harness(request);
  const auto start = Clock::now();
  while (cluster.sbatch_calls() < 2 || read_text(cluster.out / "jobs" / "ledger.json").find("1002") == std::string::npos) {
    ASSERT_LT(seconds_since(start), 60) << read_text(cluster.dir / "run.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(harness.pid(), SIGHUP);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(harness.poll()) << read_text(cluster.dir / "run.log");
  EXPECT_EQ(cluster.text("scancel_calls"), "");
  EXPECT_EQ(cluster.ledger_jobs().size(), 2U) << cluster.ledger().dump(1);
}

TEST(SlurmOwnership, ACancelledPacksUnstartedPointsAreLostAndRunAgainWithRetryFailed) {
  FakeCluster cluster = fake_cluster("pack", R"({"name": "slurm", "mode": "pack", "start_ranks_with": "mpirun"})");
  ASSERT_TRUE(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                  .outcome.exited);
  ASSERT_EQ(cluster.ledger_jobs().size(), 3U);
  // The pack ran its first point when someone scancelled it: the trap wrote 143.
  const std::string script = cluster.text("script_1001.sh");
  const auto at = script.find("run_point '");
  ASSERT_NE(at, std::string::npos) << script;
  const std::string first = script.substr(at + 11, script.find('\'', at + 11) - at - 11);
  std::ofstream(cluster.out / "jobs" / "status" / (first + ".status"))
      << "started 100.0 hnode1 1001\nfinished 101.0 143\n";
  std::ofstream(cluster.state / "cancelled") << "1001\n";
  const HarnessRun follow = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--retry-failed"}, "2.log");
  const std::string text = joined(follow.output);
  EXPECT_NE(text.find("FAILED (cancelled): job 1001 was cancelled"), std::string::npos) << text;
  EXPECT_NE(text.find("FAILED (lost): allocation 1001 ended (CANCELLED) before this point started"),
            std::string::npos) << text;
  // --retry-failed keeps the cancelled point and runs the two lost ones again, in a new pack.
  const HarnessRun retry = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--retry-failed", "--detach"}, "3.log");
  EXPECT_NE(joined(retry.output).find("kept (cancelled in an earlier run"), std::string::npos)
      << joined(retry.output);
  // Detached too, the point it kept did not complete: exit 1, saying so.
  EXPECT_EQ(retry.outcome.exit_code, 1) << joined(retry.output);
  EXPECT_NE(joined(retry.output).find("(1 kept from an earlier run by --retry-failed: 1 cancelled)"),
            std::string::npos)
      << joined(retry.output);
  EXPECT_EQ(cluster.sbatch_calls(), 2);
  EXPECT_EQ(cluster.ledger_jobs(), (std::vector<std::string>{"pack:1002", "pack:1002"})) << cluster.ledger().dump(1);
}

TEST(SlurmOwnership, JobsOfPointsThatLeftTheExperimentAreCancelledNotOrphaned) {
  FakeCluster cluster = fake_cluster("edited", kPerPoint);
  ASSERT_TRUE(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                  .outcome.exited);
  ASSERT_EQ(cluster.ledger_jobs().size(), 3U);
  // What job 1003 would have written by now: its log, measurements and rank slots.
  std::vector<fs::path> written_by_1003;
  const Json ledger = cluster.ledger();
  for (const Json& entry : ledger["jobs"]) {
    if (entry["job"].get<std::string>().find("1003") == std::string::npos) continue;
    const std::string point = entry["point"];
    const std::string measurements = entry["measurements"];
    written_by_1003 = {cluster.out / "logs" / (point + "." + entry["attempt"].get<std::string>() + ".log"),
                       measurements, measurements + ".where"};
  }
  ASSERT_EQ(written_by_1003.size(), 3U) << cluster.ledger().dump(1);
  std::ofstream(written_by_1003[0]) << "rank 0: epoch 1\n";
  std::ofstream(written_by_1003[1]) << "{}";
  fs::create_directories(written_by_1003[2]);
  std::ofstream(written_by_1003[2] / "0") << "slot";
  // The third point's batch size changes: its job (1003) would run on with no one following it.
  write_experiment(cluster.dir, own_experiment(kPerPoint, "4, 8, 32"));
  const HarnessRun edited = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "2.log");
  const std::string text = joined(edited.output);
  EXPECT_NE(text.find("harness: 1 job(s) of point(s) no longer in the experiment (p002-"), std::string::npos) << text;
  EXPECT_NE(text.find(") cancelled"), std::string::npos) << text;
  EXPECT_EQ(cluster.text("scancel_calls"), "1003\n");
  EXPECT_EQ(cluster.ledger_jobs(), (std::vector<std::string>{"per-point:1001", "per-point:1002", "per-point:1004"}))
      << cluster.ledger().dump(1);
  // Its files went with it: no point of the sweep will take them up.
  for (const fs::path& file : written_by_1003) EXPECT_FALSE(fs::exists(file)) << file;
}

TEST(SlurmOwnership, AJobWhoseLedgerCannotBeWrittenIsCancelledNotLeftUntracked) {
  FakeCluster cluster = fake_cluster("unwritable", kPerPoint);
  std::ofstream(cluster.state / "mode_2") << "block-ledger";  // the ledger becomes a folder once job 1002 is queued
  const HarnessRun run = cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string()}, "1.log");
  EXPECT_NE(run.outcome.exit_code, 0) << explained(run);
  EXPECT_EQ(cluster.sbatch_calls(), 2) << joined(run.output);
  EXPECT_NE(cluster.text("scancel_calls").find("1002"), std::string::npos) << cluster.text("scancel_calls");
}

TEST(SlurmOwnership, CtrlCStopsTheSubmittingBetweenTwoSbatch) {
  FakeCluster cluster = fake_cluster("interrupt", kPerPoint);
  std::ofstream(cluster.state / "mode_1") << "slow";
  ChildProcess harness(harness_request({"run", cluster.experiment.string(), "--out", cluster.out.string()},
                                       cluster.dir / "run.log", cluster.environment));
  const auto start = Clock::now();
  while (!fs::exists(cluster.state / "slow_1")) {
    ASSERT_LT(seconds_since(start), 60) << read_text(cluster.dir / "run.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(harness.pid(), SIGINT);
  std::optional<ProcessOutcome> ended;
  while (!(ended = harness.poll())) {
    ASSERT_LT(seconds_since(start), 60) << read_text(cluster.dir / "run.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(ended->exit_code, 130) << read_text(cluster.dir / "run.log");
  EXPECT_EQ(cluster.sbatch_calls(), 1) << read_text(cluster.dir / "run.log");
  EXPECT_EQ(cluster.text("scancel_calls"), "1001\n");
  EXPECT_EQ(read_text(cluster.dir / "run.log").find("FAILED"), std::string::npos) << read_text(cluster.dir / "run.log");
}

TEST(SlurmOwnership, StatusCollectsAJobCancelledWhileQueued) {
  FakeCluster cluster = fake_cluster("status", kPerPoint, 2);
  ASSERT_TRUE(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                  .outcome.exited);
  std::ofstream(cluster.state / "cancelled") << "1001\n";  // by someone else, before it started
  const HarnessRun status = cluster.harness({"status", cluster.out.string()}, "2.log");
  EXPECT_EQ(status.outcome.exit_code, 3) << explained(status);  // 1002 is still queued
  const std::string text = joined(status.output);
  EXPECT_NE(text.find("1 of 2 point(s) done (0 ok), 1 in flight"), std::string::npos) << text;
  EXPECT_EQ(cluster.ledger_jobs(), (std::vector<std::string>{"per-point:1002"}));
}

// A job script that failed before its point started (its setup) said why in the job's own output.
TEST(SlurmOwnership, AJobThatFailedBeforeItsPointNamesItsOwnOutput) {
  FakeCluster cluster = fake_cluster("setup_failed", kPerPoint, 1);
  ASSERT_TRUE(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                  .outcome.exited);
  std::ofstream(cluster.state / "jobs") << "1001|FAILED|\n";
  const HarnessRun status = cluster.harness({"status", cluster.out.string()}, "2.log");
  const std::string text = joined(status.output);
  EXPECT_NE(text.find("job 1001 ended FAILED and the point wrote no status; the job's output: " +
                      (cluster.out / "jobs" / "batch" / "1001.out").string()),
            std::string::npos)
      << text;
}

// With accounting, sacct leaves out jobs not yet eligible to start (held, throttled array tasks);
// squeue still lists them, and they are not taken for lost. sacct is asked from the earliest
// submission the ledger names, not from when this harness adopted the jobs.
TEST(SlurmOwnership, WithAccountingAQueuedJobSacctDoesNotListIsNotLost) {
  FakeCluster cluster = fake_cluster("sacct", kPerPoint, 2);
  std::ofstream(cluster.state / "accounting") << "";
  ASSERT_TRUE(cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--detach"}, "1.log")
                  .outcome.exited);
  Json ledger = cluster.ledger();
  for (auto& entry : ledger["jobs"]) entry["submitted_at"] = wall_clock_s() - 7200;
  write_file_atomically((cluster.out / "jobs" / "ledger.json").string(), ledger.dump(1));
  const HarnessRun status = cluster.harness({"status", cluster.out.string()}, "2.log");
  EXPECT_EQ(status.outcome.exit_code, 3) << explained(status);
  const std::string text = joined(status.output);
  EXPECT_EQ(text.find("lost"), std::string::npos) << text;
  EXPECT_NE(text.find("0 of 2 point(s) done (0 ok), 2 in flight"), std::string::npos) << text;
  EXPECT_EQ(cluster.ledger_jobs().size(), 2U);
  const std::string sacct = cluster.text("sacct_calls");
  const auto at = sacct.rfind("--starttime=now-");
  ASSERT_NE(at, std::string::npos) << sacct;
  EXPECT_GE(std::stol(sacct.substr(at + 16)), 7200) << sacct;
}

}  // namespace
}  // namespace harness::e2e
