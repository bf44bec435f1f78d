// End to end, without a cluster: which points a resumed run runs again (--retry-failed), the
// SLURM launcher's dry run, the commands for jobs that outlive the harness used where they do not
// apply, and which rank program a point runs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "backends/gloo_allreduce.h"
#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/results/record.h"
#include "harness/results/results_directory.h"

namespace harness::e2e {
namespace {

// Rewrites a record's status, as a run that ended that way would have written it.
// The point records of run directory `out`, in point order.
std::vector<fs::path> record_files(const fs::path& out) {
  std::vector<fs::path> records;
  for (const auto& entry : fs::directory_iterator(out / "points")) records.push_back(entry.path());
  std::sort(records.begin(), records.end());
  return records;
}

void set_status(const fs::path& record, const std::string& status) {
  Json json = read_json_file(record.string());
  json["status"] = status;
  json["reason"] = "as if it had ended " + status;
  json["log_tail"] = Json::array();
  json["partial_measurements"] = json["measurements"];
  json["partial_measurements"]["complete"] = false;
  json["measurements"] = nullptr;
  std::ofstream(record) << json.dump();
}

std::string line_of(const HarnessRun& run, const std::string& prefix) {
  for (const auto& line : run.output) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// The local launcher's simulated hosts: a comm point on 2 nodes x 2 ranks of this machine, its
// record listing the nodes and the transport's bandwidth inside a node and between nodes.
TEST(Launchers, SimulatedHostsRunPointsAcrossNodesAndRecordsListThem) {
  if (::geteuid() != 0) GTEST_SKIP() << "simulated hosts need root (a UTS namespace per host)";
  const fs::path dir = scratch("simulated_hosts");
  const std::string launcher = R"("launcher": {"name": "local", "hosts": ["nodea", "nodeb"], "simulate_hosts": true})";
  // shm cannot span nodes: refused before anything starts, naming hier.
  fs::create_directories(dir / "refused");
  const fs::path refused = write_experiment(
      dir / "refused", R"({"name": "mn", "settings": {"kind": "comm", "ranks": 4, "nodes": 2, "backend": "shm"}, )" +
                           launcher + "}");
  const HarnessRun refusal = run_harness({"run", refused.string(), "--out", (dir / "refused" / "out").string()},
                                         dir / "refused.log");
  EXPECT_EQ(refusal.outcome.exit_code, 2) << joined(refusal.output);
  EXPECT_NE(joined(refusal.output).find("or backend \"hier\""), std::string::npos) << joined(refusal.output);

  const fs::path experiment = write_experiment(
      dir, R"({"name": "mn", "settings": {"kind": "comm", "ranks": 4, "nodes": 2, "comm_min_bytes": 4,
               "comm_max_bytes": 4194304, "comm_size_factor": 32, "comm_iterations": 3, "comm_warmup_iterations": 1},
             "sweep": {"backend": ["hier", "allreduce"]}, )" + launcher + "}");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log");
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_NE(joined(run.output).find("inter"), std::string::npos) << joined(run.output);
  int records = 0;
  for (const auto& entry : fs::directory_iterator(out / "points")) {
    const Json record = read_json_file(entry.path().string());
    const Json& measurements = record["measurements"];
    EXPECT_EQ(measurements["hosts"], Json({"nodea", "nodea", "nodeb", "nodeb"})) << entry.path();
    EXPECT_EQ(measurements["nodes"],
              Json::parse(R"([{"host": "nodea", "ranks": [0, 1]}, {"host": "nodeb", "ranks": [2, 3]}])"));
    for (const Json& size : measurements["sizes"]) {
      EXPECT_EQ(size["wrong"], 0);
      EXPECT_GT(size["intra_node_gbps"].get<double>(), 0) << size.dump();
      EXPECT_GT(size["inter_node_gbps"].get<double>(), 0) << size.dump();
    }
    ++records;
  }
  EXPECT_EQ(records, 2);
  for (const auto& row : read_csv(out / "summary.csv")) EXPECT_EQ(row.at("nodes"), "2");
  // The cost model has hier's form on one node only: refused in one line, not fitted wrongly.
  const HarnessRun model = run_harness({"model", out.string()}, dir / "model.log");
  EXPECT_EQ(model.outcome.exit_code, 2) << joined(model.output);
  EXPECT_NE(joined(model.output).find("backend \"hier\" ran on 2 nodes"), std::string::npos) << joined(model.output);
}

// A training record of a schema whose step times meant something else (one rank's, before
// kStepMeansSince) is not kept: the study would report both meanings side by side.
TEST(Launchers, AResumedRunMeasuresAgainWhatAnOlderSchemaTimedOtherwise) {
  const fs::path dir = scratch("older_schema");
  const fs::path experiment =
      write_experiment(dir, R"({"name": "older", "settings": {"workload": "iris_mlp"}, "sweep": {"epochs": [1, 2]}})");
  const fs::path out = dir / "out";
  ASSERT_EQ(run_harness({"run", experiment.string(), "--out", out.string()}, dir / "1.log").outcome.exit_code, 0);
  const std::vector<fs::path> records = record_files(out);
  ASSERT_EQ(records.size(), 2U);
  Json json = read_json_file(records[0].string());
  json["schema_version"] = kStepMeansSince - 1;
  std::ofstream(records[0]) << json.dump();
  const HarnessRun again = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "2.log");
  ASSERT_EQ(again.outcome.exit_code, 0) << explained(again);
  EXPECT_NE(line_of(again, "[1/2]").find(" ok ("), std::string::npos) << joined(again.output);
  EXPECT_NE(line_of(again, "[2/2]").find("kept (completed in an earlier run)"), std::string::npos)
      << joined(again.output);
  EXPECT_EQ(read_json_file(records[0].string())["schema_version"], kRecordSchemaVersion);
}

TEST(Launchers, RetryFailedRunsOnlyFailedLostRetryableAndMissingPoints) {
  const fs::path dir = scratch("retry_failed");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "retry", "settings": {"workload": "iris_mlp"}, "sweep": {"epochs": [2, 3, 4, 5, 6, 7]}})");
  const fs::path out = dir / "out";
  ASSERT_EQ(run_harness({"run", experiment.string(), "--out", out.string()}, dir / "1.log").outcome.exit_code, 0);
  const std::vector<fs::path> records = record_files(out);
  ASSERT_EQ(records.size(), 6U);
  set_status(records[0], "timeout");
  set_status(records[1], "node_failure");
  set_status(records[2], "failed");
  set_status(records[3], "lost");
  set_status(records[4], "oom");
  // records[5] stays ok.
  const HarnessRun retry = run_harness({"run", experiment.string(), "--out", out.string(), "--retry-failed"},
                                       dir / "2.log");
  // The points it kept did not complete: the study is not whole, so the run fails.
  ASSERT_EQ(retry.outcome.exit_code, 1) << explained(retry);
  EXPECT_NE(joined(retry.output).find("harness: 2 of 6 point(s) failed (2 kept from an earlier run by "
                                      "--retry-failed: 1 oom, 1 timeout)"),
            std::string::npos) << joined(retry.output);
  EXPECT_NE(line_of(retry, "[1/6]").find("kept (timeout in an earlier run; --retry-failed keeps it)"),
            std::string::npos) << joined(retry.output);
  EXPECT_NE(line_of(retry, "[5/6]").find("kept (oom in an earlier run"), std::string::npos) << joined(retry.output);
  EXPECT_NE(line_of(retry, "[6/6]").find("kept (completed in an earlier run)"), std::string::npos);
  for (const char* ran : {"[2/6]", "[3/6]", "[4/6]"}) {
    EXPECT_NE(line_of(retry, ran).find(" ok ("), std::string::npos) << ran << "\n" << joined(retry.output);
  }
  EXPECT_EQ(read_json_file(records[0].string())["status"], "timeout");
  // Without the flag, everything not ok runs again.
  const HarnessRun resume = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "3.log");
  ASSERT_EQ(resume.outcome.exit_code, 0) << explained(resume);
  EXPECT_NE(line_of(resume, "[1/6]").find(" ok ("), std::string::npos) << joined(resume.output);
  EXPECT_NE(line_of(resume, "[5/6]").find(" ok ("), std::string::npos) << joined(resume.output);
  for (const auto& row : read_csv(out / "summary.csv")) EXPECT_EQ(row.at("status"), "ok");
  // `status` of a finished local run: every point done.
  const HarnessRun status = run_harness({"status", out.string()}, dir / "4.log");
  EXPECT_EQ(status.outcome.exit_code, 0) << explained(status);
  EXPECT_NE(joined(status.output).find("6 of 6 point(s) done (6 ok), 0 in flight, 0 not submitted"),
            std::string::npos) << joined(status.output);
}

TEST(Launchers, SlurmDryRunRendersEveryScriptAndSaysWhatItWouldAskForAndCreatesNothing) {
  const fs::path dir = scratch("slurm_dry_run");
  const fs::path experiment = write_experiment(dir, R"({"name": "dry",
    "launcher": {"name": "slurm", "partition": "debug", "mode": "array", "array_throttle": 2},
    "settings": {"workload": "iris_mlp", "timeout_s": 300}, "sweep": {"ranks": [1, 2], "batch_size": [4, 8, 16]}})");
  const fs::path out = dir / "out";
  // No SLURM_CONF: no cluster answers, so SLURM's defaults (and it says so).
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string(), "--dry-run"}, dir / "log");
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  const std::string text = joined(run.output);
  EXPECT_NE(text.find("--- job 1 of 2: array of 3 point(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("sbatch --parsable --chdir="), std::string::npos) << text;
  EXPECT_NE(text.find("#SBATCH --partition=debug"), std::string::npos) << text;
  EXPECT_NE(text.find("#SBATCH --array=0-2%2"), std::string::npos) << text;
  EXPECT_NE(text.find("#SBATCH --time=6"), std::string::npos) << text;
  // 6 array tasks of 6 minutes on one node.
  EXPECT_NE(text.find("slurm: 2 job(s) for 6 point(s), at most 0.60 node-hour(s) requested"), std::string::npos)
      << text;
  EXPECT_FALSE(fs::exists(out));
}

// The default results directory is named by the local time to the second: a run that finds it
// taken (another run started in the same second) takes the next free name instead of resuming
// that run or being refused for it.
TEST(Launchers, ADefaultDirectoryTakenInTheSameSecondGetsANameOfItsOwn) {
  const fs::path dir = scratch("default_dir");
  const fs::path experiment = write_experiment(dir, R"({"name": "same_second", "settings": {"epochs": 1}})");
  for (int ahead = 0; ahead < 10; ++ahead) {  // this second's name and the next ones, as taken
    const std::time_t when = std::time(nullptr) + ahead;
    std::tm local{};
    ::localtime_r(&when, &local);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
    fs::create_directories(dir / "results" / "same_second" / stamp);
  }
  const HarnessRun run = run_harness({"run", experiment.string()}, dir / "1.log");
  EXPECT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_NE(joined(run.output).find("-2\n"), std::string::npos) << joined(run.output);
  std::size_t with_records = 0;
  for (const auto& entry : fs::directory_iterator(dir / "results" / "same_second")) {
    if (fs::exists(entry.path() / "points")) ++with_records;
  }
  EXPECT_EQ(with_records, 1U);
}

// A results directory that cannot be written (a read-only copy; here its lock file made
// immutable, which stops root too) is shown as it is, not refused: status collects nothing there.
TEST(Launchers, StatusShowsADirectoryItCannotWrite) {
  const fs::path dir = scratch("status_read_only");
  const fs::path experiment = write_experiment(dir, R"({"name": "readonly", "settings": {"epochs": 1}})");
  const fs::path out = dir / "out";
  ASSERT_EQ(run_harness({"run", experiment.string(), "--out", out.string()}, dir / "1.log").outcome.exit_code, 0);
  const auto chattr = [&](const char* flag) {
    ProcessRequest request;
    request.argv = {"chattr", flag, (out / ".lock").string()};
    request.log_path = (dir / "chattr.log").string();
    return run_process(request).ok();
  };
  if (!chattr("+i")) GTEST_SKIP() << "chattr +i is not supported here: " << read_text(dir / "chattr.log");
  const HarnessRun status = run_harness({"status", out.string()}, dir / "2.log");
  ASSERT_TRUE(chattr("-i"));
  EXPECT_EQ(status.outcome.exit_code, 0) << joined(status.output);
  EXPECT_NE(joined(status.output).find("cannot create its lock file: Operation not permitted"), std::string::npos)
      << joined(status.output);
  EXPECT_NE(joined(status.output).find("showing the records as they are; nothing is collected"), std::string::npos);
  EXPECT_NE(joined(status.output).find("1 of 1 point(s) recorded so far, 0 in flight"), std::string::npos)
      << joined(status.output);
}

TEST(Launchers, DetachAndCancelSayWhereTheyDoNotApplyAndStatusShowsARunsRecords) {
  const fs::path dir = scratch("detach_local");
  const fs::path experiment = write_experiment(dir, R"({"name": "detach", "settings": {"epochs": 1}})");
  const HarnessRun detach = run_harness({"run", experiment.string(), "--out", (dir / "out").string(), "--detach"},
                                        dir / "1.log");
  EXPECT_EQ(detach.outcome.exit_code, 2);
  ASSERT_EQ(detach.output.size(), 1U) << joined(detach.output);
  EXPECT_NE(detach.output[0].find("--detach: the local launcher's jobs end with the harness"), std::string::npos)
      << detach.output[0];
  EXPECT_FALSE(fs::exists(dir / "out"));
  const HarnessRun status = run_harness({"status", (dir / "nothing").string()}, dir / "2.log");
  EXPECT_EQ(status.outcome.exit_code, 2);
  EXPECT_NE(joined(status.output).find("not a results directory (no experiment.json)"), std::string::npos);
  // A directory a local run writes (its lock held here): no job to cancel, and cancel says how to
  // stop that run instead of "no jobs in flight".
  const fs::path out = dir / "ran";
  ASSERT_EQ(run_harness({"run", experiment.string(), "--out", out.string()}, dir / "3.log").outcome.exit_code, 0);
  {
    const ResultsDirectory directory(out.string());
    const DirectoryLock held(directory, {"harness", "run", "(held by the test)"});
    const HarnessRun cancel = run_harness({"cancel", out.string()}, dir / "4.log");
    EXPECT_EQ(cancel.outcome.exit_code, 2) << joined(cancel.output);
    EXPECT_NE(joined(cancel.output).find("stop it with Ctrl-C where it runs"), std::string::npos)
        << joined(cancel.output);
    // status shows the records so far without collecting (a local run has no jobs to list).
    const HarnessRun status_while_held = run_harness({"status", out.string()}, dir / "4b.log");
    EXPECT_EQ(status_while_held.outcome.exit_code, 3) << joined(status_while_held.output);
    EXPECT_NE(joined(status_while_held.output).find("[1/1] p000-"), std::string::npos) << joined(status_while_held.output);
    EXPECT_NE(joined(status_while_held.output).find(": ok"), std::string::npos) << joined(status_while_held.output);
    EXPECT_NE(joined(status_while_held.output).find("1 of 1 point(s) recorded so far, 0 in flight"), std::string::npos)
        << joined(status_while_held.output);
  }
  const HarnessRun idle = run_harness({"cancel", out.string()}, dir / "5.log");
  EXPECT_EQ(idle.outcome.exit_code, 0) << joined(idle.output);
  EXPECT_NE(joined(idle.output).find("no jobs in flight"), std::string::npos) << joined(idle.output);
}

// The harness binary copied without its rank programs (harness-worker and harness-comm-worker,
// beside it): each point fails saying which program is missing and where it was looked for:
// harness-comm-worker for comm points of backends but gloo, else harness-worker (cli/main.cpp).
TEST(EndToEnd, AHarnessWithoutItsRankProgramFailsThePointSayingWhy) {
  const fs::path dir = scratch("lone_harness");
  fs::create_directories(dir / "alone");
  fs::copy_file(HARNESS_BINARY, dir / "alone" / "harness");
  const auto expect_missing = [&](const std::string& name, const std::string& experiment,
                                  const std::vector<std::string>& programs) {
    fs::create_directories(dir / name);
    ProcessRequest request = harness_request(
        {"run", write_experiment(dir / name, experiment).string(), "--out", (dir / name / "out").string()},
        dir / name / "log");
    request.argv[0] = (dir / "alone" / "harness").string();
    EXPECT_EQ(run_process(request).exit_code, 1) << read_text(dir / name / "log");
    const auto rows = read_csv(dir / name / "out" / "summary.csv");
    ASSERT_EQ(rows.size(), programs.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].at("status"), "failed");
      EXPECT_NE(rows[i].at("reason").find("rank 0: cannot start the rank program " +
                                          (dir / "alone" / programs[i]).string() + ": No such file or directory"),
                std::string::npos)
          << rows[i].at("backend") << ": " << rows[i].at("reason");
    }
  };
  expect_missing("train", R"({"name": "lone", "settings": {"epochs": 1}})", {"harness-worker"});
  expect_missing("comm", R"({"name": "lone", "settings": {"kind": "comm", "comm_max_bytes": 4096}})",
                 {"harness-comm-worker"});
  if (gloo_available()) {  // LibTorch's, so in harness-worker
    expect_missing("gloo", R"({"name": "lone", "settings": {"kind": "comm", "backend": "gloo", "comm_max_bytes": 4096}})",
                   {"harness-worker"});
  }
}

// Inside a SLURM allocation the local launcher starts the ranks with srun, through `env` (which
// sets their thread counts). A step srun cannot start is srun's failure, in its own words: here a
// fake srun first on PATH says what a real one says when the allocation is ending.
TEST(Launchers, AStepSrunCannotStartIsSrunsFailureNotEnvs) {
  const fs::path dir = scratch("srun_refuses");
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin" / "srun")
      << "#!/bin/sh\n"
      << "if [ \"$1\" = --mpi=list ]; then echo 'MPI plugin types are...'; echo '\tpmix'; exit 0; fi\n"
      << "echo 'srun: error: Unable to create step for job 7: Job/step already completing or completed' >&2\n"
      << "exit 1\n";
  fs::permissions(dir / "bin" / "srun", fs::perms::owner_all);
  const fs::path experiment = write_experiment(dir, R"({"name": "refused", "settings": {"epochs": 1}})");
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "log",
                                     {{"PATH", (dir / "bin").string() + ":" + std::getenv("PATH")},
                                      {"SLURM_JOB_ID", "7"},
                                      {"SLURM_JOB_NUM_NODES", "1"}});
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);
  const auto rows = read_csv(dir / "out" / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("reason"),
            "srun exit code 1: srun: Unable to create step for job 7: Job/step already completing or completed");
  const Json record = read_json_file((dir / "out" / "points" / (rows[0].at("id") + ".json")).string());
  EXPECT_EQ(record["launch"]["command"][0], "env");  // the command as it ran
}

}  // namespace
}  // namespace harness::e2e
