// How the SLURM launcher decides a point's end from its status file and the scheduler's word,
// parses what squeue, sacct and scontrol print, and paces its queries.
#include "harness/launch/slurm_follow.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/launch/job_ledger.h"
#include "harness/launch/slurm_commands.h"

namespace harness {
namespace {

PointStatusFile finished(int code, double elapsed_s = 5) {
  return parse_status_file("started 100.0 hnode1 12\nfinished " + std::to_string(100.0 + elapsed_s) + " " +
                           std::to_string(code) + "\n");
}

FollowedJob job(bool packed = false) {
  FollowedJob job;
  job.slurm_id = "12";
  job.packed = packed;
  job.time_limit_s = 60;
  return job;
}

SchedulerJob seen(const std::string& state, const std::string& nodes = "hnode2") {
  return {"12", state, "", nodes};
}

TEST(SlurmFollow, StatusFilesAreReadLineByLineAndAHalfLineIsNoFinish) {
  const PointStatusFile status = parse_status_file("started 1700000000.25 hnode1 12 array task 3\nfinished 1700");
  EXPECT_TRUE(status.started);
  EXPECT_DOUBLE_EQ(status.started_at, 1700000000.25);
  EXPECT_EQ(status.host, "hnode1");
  EXPECT_FALSE(status.finished);
  EXPECT_FALSE(read_status_file("/no/such/file").started);
  // A status file read through a link planted among them would speak for another point.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "harness_slurm_follow_link";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "other.status") << "started 1 hnode1 12\nfinished 2 0\n";
  std::filesystem::create_symlink(dir / "other.status", dir / "p000.status");
  EXPECT_TRUE(read_status_file((dir / "other.status").string()).finished);
  EXPECT_FALSE(read_status_file((dir / "p000.status").string()).started);
}

TEST(SlurmFollow, TheFileDecidesWhatItCan) {
  FollowedJob followed = job();
  EXPECT_EQ(judge_job(followed, finished(0), nullptr, false)->end, JobEnd::kCompleted);
  const auto timeout = judge_job(followed, finished(124), nullptr, false);
  EXPECT_EQ(timeout->end, JobEnd::kTimeout);
  EXPECT_EQ(timeout->reason, "timed out after the 60 s limit");
  // KILLed after the TERM of `timeout`, past the limit.
  EXPECT_EQ(judge_job(followed, finished(137, 70), nullptr, false)->end, JobEnd::kTimeout);
  // Running, or not started, and no query this poll: nothing to say.
  EXPECT_FALSE(judge_job(followed, parse_status_file("started 1 h 1\n"), nullptr, false));
  EXPECT_FALSE(judge_job(followed, {}, nullptr, false));
}

TEST(SlurmFollow, AFailedOrSignalledJobWaitsForTheSchedulersFinalState) {
  FollowedJob followed = job();
  // The job is still completing: wait, however long that lasts.
  const SchedulerJob completing = seen("COMPLETING");
  for (int query = 0; query < 5; ++query) EXPECT_FALSE(judge_job(followed, finished(143), &completing, true));
  const SchedulerJob cancelled = seen("CANCELLED");
  EXPECT_EQ(judge_job(followed, finished(143), &cancelled, true)->end, JobEnd::kCancelled);
  // srun's own exit code 1 when a scancel came as it started the step: the same wait.
  FollowedJob starting = job();
  for (int query = 0; query < 5; ++query) EXPECT_FALSE(judge_job(starting, finished(1, 0.2), &completing, true));
  EXPECT_EQ(judge_job(starting, finished(1, 0.2), &cancelled, true)->end, JobEnd::kCancelled);
  // Forgotten by the scheduler before it showed a final state: failed, saying so.
  FollowedJob forgotten = job();
  EXPECT_FALSE(judge_job(forgotten, finished(143), nullptr, true));
  const auto unknown = judge_job(forgotten, finished(143), nullptr, true);
  EXPECT_EQ(unknown->end, JobEnd::kFailed);
  EXPECT_EQ(unknown->reason,
            "stopped by signal 15 (scancel, a time limit or a preemption), and job 12 left the scheduler's list "
            "before its final state could be read");
  const SchedulerJob node_fail = seen("NODE_FAIL");
  FollowedJob other = job();
  const auto verdict = judge_job(other, finished(1), &node_fail, true);
  EXPECT_EQ(verdict->end, JobEnd::kNodeFailure);
  EXPECT_EQ(verdict->reason, "job 12 ended NODE_FAIL: a node failed on hnode2");
  const SchedulerJob failed = seen("FAILED");
  FollowedJob third = job();
  const auto plain = judge_job(third, finished(3), &failed, true);
  EXPECT_EQ(plain->end, JobEnd::kFailed);
  EXPECT_EQ(plain->reason, "");  // the ranks' own failure: the record reads it from the log
  const SchedulerJob oom = seen("OUT_OF_MEMORY");
  FollowedJob fourth = job();
  EXPECT_EQ(judge_job(fourth, finished(137, 1), &oom, true)->end, JobEnd::kOutOfMemory);
  // A pack's allocation goes on: a step's failure is the point's alone once a query made after it
  // was read shows the allocation still running (one made in the same poll may predate a scancel).
  FollowedJob packed = job(true);
  const SchedulerJob running = seen("RUNNING");
  EXPECT_FALSE(judge_job(packed, finished(1), &running, true));
  EXPECT_TRUE(packed.failure_read);
  EXPECT_FALSE(judge_job(packed, finished(1), &running, false));
  const auto own = judge_job(packed, finished(1), &running, true);
  EXPECT_EQ(own->end, JobEnd::kFailed);
  EXPECT_EQ(own->reason, "");
  FollowedJob signalled = job(true);
  EXPECT_FALSE(judge_job(signalled, finished(137, 1), &running, true));
  EXPECT_EQ(judge_job(signalled, finished(137, 1), &running, true)->end, JobEnd::kFailed);
  // Its last point failing on its own: the allocation completes after it.
  FollowedJob last = job(true);
  const SchedulerJob completed = seen("COMPLETED");
  EXPECT_FALSE(judge_job(last, finished(1), &running, true));
  EXPECT_FALSE(judge_job(last, finished(1), &completing, true));
  const auto last_own = judge_job(last, finished(1), &completed, true);
  EXPECT_EQ(last_own->end, JobEnd::kFailed);
  EXPECT_EQ(last_own->reason, "");
}

TEST(SlurmFollow, AJobThatDiedWithoutAWordIsJudgedAfterTwoQueries) {
  FollowedJob followed = job();
  const PointStatusFile started = parse_status_file("started 1 hnode2 12\n");
  const SchedulerJob node_fail = seen("NODE_FAIL");
  EXPECT_FALSE(judge_job(followed, started, &node_fail, true));  // the file may yet appear
  EXPECT_EQ(judge_job(followed, started, &node_fail, true)->end, JobEnd::kNodeFailure);
  // Vanished: lost, never ok.
  FollowedJob vanished = job();
  EXPECT_FALSE(judge_job(vanished, started, nullptr, true));
  const auto lost = judge_job(vanished, started, nullptr, true);
  EXPECT_EQ(lost->end, JobEnd::kLost);
  EXPECT_EQ(lost->reason,
            "job 12 vanished from the scheduler without a status file (the point had started on hnode2)");
  // Still listed as running in between resets the count.
  FollowedJob flapping = job();
  const SchedulerJob running = seen("RUNNING");
  EXPECT_FALSE(judge_job(flapping, started, nullptr, true));
  EXPECT_FALSE(judge_job(flapping, started, &running, true));
  EXPECT_FALSE(judge_job(flapping, started, nullptr, true));
  // A COMPLETED job without a finished line did not complete the point.
  FollowedJob silent = job();
  const SchedulerJob completed = seen("COMPLETED");
  judge_job(silent, started, &completed, true);
  EXPECT_EQ(judge_job(silent, started, &completed, true)->end, JobEnd::kFailed);
  // A pack that ended before a point's turn: lost, so that it runs again.
  FollowedJob waiting = job(true);
  const SchedulerJob timeout = seen("TIMEOUT");
  judge_job(waiting, {}, &timeout, true);
  EXPECT_EQ(judge_job(waiting, {}, &timeout, true)->end, JobEnd::kLost);
}

// A job script that failed before its point started (its setup) said why in the job's own
// output, not in the point's log: the reason names that file.
TEST(SlurmFollow, AJobThatFailedBeforeItsPointStartedNamesItsOwnOutput) {
  FollowedJob failed = job();
  failed.batch_output = "/results/jobs/batch/12.out";
  const SchedulerJob ended = seen("FAILED");
  EXPECT_FALSE(judge_job(failed, {}, &ended, true));
  const auto verdict = judge_job(failed, {}, &ended, true);
  EXPECT_EQ(verdict->end, JobEnd::kFailed);
  EXPECT_EQ(verdict->reason,
            "job 12 ended FAILED and the point wrote no status; the job's output: /results/jobs/batch/12.out");
}

// A job that died without a finished line is dated when the harness saw it end, but never past
// what its point could have run: a harness that adopts it hours later must not count them.
TEST(SlurmFollow, AnEndNobodyWroteIsDatedNoLaterThanThePointCouldHaveRun) {
  FollowedJob followed = job();
  followed.time_limit_s = 100;
  const PointStatusFile started = parse_status_file("started 1000 hnode2 12\n");
  EXPECT_DOUBLE_EQ(point_ended_at(started, followed, 1050), 1050);  // seen while it could still run
  EXPECT_DOUBLE_EQ(point_ended_at(started, followed, 1000 + 3 * 3600), 1000 + 100 + kJobMarginS);
  EXPECT_DOUBLE_EQ(point_ended_at(parse_status_file("started 1000 hnode2 12\nfinished 1042 0\n"), followed, 9999),
                   1042);
  EXPECT_DOUBLE_EQ(point_ended_at({}, followed, 5000), 5000);  // never started: nothing to bound it by
}

TEST(SlurmFollow, ACancelledPackCancelsItsRunningPointAndLosesTheOthers) {
  // scancel of a pack: the running point's trap writes 143 while the allocation completes. The
  // last query's RUNNING, from before the scancel, does not make it a failure of its ranks.
  FollowedJob running = job(true);
  const SchedulerJob before = seen("RUNNING");
  EXPECT_FALSE(judge_job(running, finished(143), &before, false));
  const SchedulerJob completing = seen("COMPLETING");
  EXPECT_FALSE(judge_job(running, finished(143), &completing, true));
  const SchedulerJob cancelled = seen("CANCELLED");
  const auto stopped = judge_job(running, finished(143), &cancelled, true);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->end, JobEnd::kCancelled);
  // scancel as srun starts the point's step: srun fails on its own (exit 1, "Job/step already
  // completing or completed"), and the allocation's state says it was cancelled.
  FollowedJob starting = job(true);
  EXPECT_FALSE(judge_job(starting, finished(1, 0.2), &before, true));
  const auto stopped_at_start = judge_job(starting, finished(1, 0.2), &cancelled, true);
  ASSERT_TRUE(stopped_at_start);
  EXPECT_EQ(stopped_at_start->end, JobEnd::kCancelled);
  // Its points that never started are lost (--retry-failed runs them), not cancelled (kept).
  FollowedJob waiting = job(true);
  EXPECT_FALSE(judge_job(waiting, {}, &cancelled, true));
  const auto lost = judge_job(waiting, {}, &cancelled, true);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->end, JobEnd::kLost);
  EXPECT_EQ(lost->reason, "allocation 12 ended (CANCELLED) before this point started");
  // A job of its own that was cancelled before it started stays cancelled.
  FollowedJob alone = job();
  judge_job(alone, {}, &cancelled, true);
  EXPECT_EQ(judge_job(alone, {}, &cancelled, true)->end, JobEnd::kCancelled);
}

TEST(SlurmFollow, QueriesBackOffWithJitterUnderTheCapAndResetOnNews) {
  QueryBackoff backoff(query_cap_s(60));  // MinJobAge 60 s: at most every 15 s
  EXPECT_TRUE(backoff.due(0));
  double now = 1000;
  backoff.reset(now);
  EXPECT_FALSE(backoff.due(now + 1));
  EXPECT_TRUE(backoff.due(now + 2));
  std::vector<double> gaps;
  for (int i = 0; i < 8; ++i) {
    backoff.queried(now);
    gaps.push_back(backoff.next_at() - now);
    now = backoff.next_at();
  }
  EXPECT_GE(gaps[0], 1.5);
  EXPECT_LE(gaps[0], 2.0 + 1e-6);
  EXPECT_GT(gaps[3], gaps[0]);
  for (const double gap : gaps) EXPECT_LE(gap, 15.0 + 1e-6);
  backoff.reset(now);
  EXPECT_TRUE(backoff.due(now + 2));
  EXPECT_DOUBLE_EQ(query_cap_s(300), 60);
  EXPECT_DOUBLE_EQ(query_cap_s(4), 2);
}

TEST(SlurmCommands, SqueueSacctAndScontrolOutputIsParsed) {
  const auto jobs = parse_squeue("12_[2-3%2]|PENDING|JobArrayTaskLimit|\n12_0|RUNNING|None|hnode1\n"
                                 "13|NODE_FAIL|NodeDown|hnode2\n");
  ASSERT_EQ(jobs.size(), 4U);
  EXPECT_EQ(jobs[0].id, "12_2");
  EXPECT_EQ(jobs[1].id, "12_3");
  EXPECT_EQ(jobs[1].reason, "JobArrayTaskLimit");
  EXPECT_EQ(jobs[2].reason, "");
  EXPECT_EQ(jobs[3].state, "NODE_FAIL");
  const auto accounted = parse_sacct("14|CANCELLED by 0|hnode1\n15_[1,3-4]|PENDING|None assigned\n");
  ASSERT_EQ(accounted.size(), 4U);
  EXPECT_EQ(accounted[0].state, "CANCELLED");
  EXPECT_EQ(accounted[3].id, "15_4");
  EXPECT_EQ(accounted[3].nodes, "");
  const ClusterConfig config = parse_config("MaxArraySize            = 4\nMinJobAge               = 60 sec\n"
                                            "AccountingStorageType   = accounting_storage/none\n");
  EXPECT_EQ(config.max_array_size, 4);
  EXPECT_DOUBLE_EQ(config.min_job_age_s, 60);
  EXPECT_FALSE(config.accounting);
  EXPECT_TRUE(parse_config("AccountingStorageType = accounting_storage/slurmdbd\n").accounting);
  ClusterConfig partition;
  parse_sinfo("2|UNLIMITED|debug\n4+|1-12:00:00|batch*\n", "", partition);
  EXPECT_EQ(partition.cpus_per_node, 4);
  EXPECT_DOUBLE_EQ(partition.max_time_s, 36 * 3600);
  parse_sinfo("2|UNLIMITED|debug\n", "debug", partition);
  EXPECT_DOUBLE_EQ(partition.max_time_s, 0);
  EXPECT_DOUBLE_EQ(parse_slurm_time_s("30"), 1800);
  EXPECT_DOUBLE_EQ(parse_slurm_time_s("30:15"), 1815);
  EXPECT_DOUBLE_EQ(parse_slurm_time_s("2:00:00"), 7200);
  EXPECT_DOUBLE_EQ(parse_slurm_time_s("2-3"), 2 * 86400 + 3 * 3600);
  EXPECT_DOUBLE_EQ(parse_slurm_time_s("infinite"), 0);
  EXPECT_TRUE(is_final_state("TIMEOUT"));
  EXPECT_FALSE(is_final_state("COMPLETING"));
  EXPECT_FALSE(is_final_state(""));
}

TEST(JobLedger, RoundTripsAndANewOneHasASweepId) {
  const auto dir = std::filesystem::temp_directory_path() / "harness_ledger_test";
  std::filesystem::remove_all(dir);
  const ResultsDirectory directory(dir.string());
  JobLedger ledger = read_ledger(directory);
  EXPECT_EQ(ledger.sweep_id.size(), 8U);
  EXPECT_TRUE(ledger.entries.empty());
  ledger.launcher = {{"name", "slurm"}, {"mode", "pack"}};
  ledger.entries.push_back({"p000-1", "0000abcd", "pack:12", "/m.json", {"srun", "x"}, 1.5, std::nullopt, ""});
  write_ledger(directory, ledger);
  const JobLedger read = read_ledger(directory);
  EXPECT_EQ(read.sweep_id, ledger.sweep_id);
  EXPECT_EQ(read.launcher, ledger.launcher);
  ASSERT_EQ(read.entries.size(), 1U);
  EXPECT_EQ(read.entries[0].external_id, "pack:12");
  EXPECT_EQ(read.entries[0].command, (std::vector<std::string>{"srun", "x"}));
}

}  // namespace
}  // namespace harness
