// Following a sweep on the real cluster: after the harness is killed, detached or watched by
// wrappers that count its scheduler queries; values of an experiment that would be code to a
// shell; and `harness run` inside an allocation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "slurm_test_helpers.h"
#include "harness/common/clock.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/launch/job_ledger.h"

namespace harness::e2e {
namespace {

// A directory of wrappers that log each call of the SLURM commands (with the job it ran in, if
// any) to `log`, then run the real command.
fs::path command_wrappers(const fs::path& dir, const fs::path& log) {
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  for (const char* command : {"sbatch", "squeue", "sacct", "scontrol", "sinfo", "scancel", "srun"}) {
    const fs::path path = bin / command;
    std::ofstream(path) << "#!/bin/bash\necho \"job=${SLURM_JOB_ID:-none} " << command << " $*\" >> '"
                        << log.string() << "'\nexec /usr/bin/" << command << " \"$@\"\n";
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }
  return bin;
}

std::vector<std::string> calls(const fs::path& log, const std::string& command, bool from_jobs = false) {
  std::vector<std::string> found;
  std::istringstream lines(read_text(log));
  std::string line;
  while (std::getline(lines, line)) {
    const bool in_job = line.rfind("job=none ", 0) != 0;
    if (in_job == from_jobs && line.find(" " + command + " ") != std::string::npos) found.push_back(line);
  }
  return found;
}

std::vector<std::pair<std::string, std::string>> with_path(const fs::path& bin) {
  return {{"PATH", bin.string() + ":" + std::getenv("PATH")}};
}

const char* kFourPoints = R"({"name": "follow", "launcher": {"name": "slurm", "mode": "%s"},
  "settings": {"workload": "iris_mlp", "epochs": %s, "timeout_s": 120, "threads_per_rank": 1},
  "sweep": {"batch_size": [4, 8, 16, 32]}})";

std::string four_points(const std::string& mode, const std::string& epochs) {
  std::string text = kFourPoints;
  text.replace(text.find("%s"), 2, mode);
  text.replace(text.find("%s"), 2, epochs);
  return text;
}

TEST(SlurmFollowUp, QueriesAreOnePerPollForTheWholeSweep) {
  const fs::path dir = scratch("slurm_queries");
  const fs::path log = dir / "calls.log";
  const fs::path bin = command_wrappers(dir, log);
  // Points of several seconds each, so that the harness polls more than once (a harness that polled
  // without backing off would query dozens of times).
  const fs::path experiment = write_experiment(dir, four_points("per-point", "800"));
  const auto start = Clock::now();
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log",
                                     with_path(bin));
  const double elapsed_s = seconds_since(start);
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_EQ(calls(log, "sbatch").size(), 4U) << read_text(log);
  const std::string name = "--name=harness-" + read_ledger(ResultsDirectory((dir / "out").string())).sweep_id;
  const auto queries = calls(log, "squeue");
  EXPECT_FALSE(queries.empty()) << read_text(log);  // the sweep was followed through squeue
  for (const auto& query : queries) {
    // The whole sweep by its name, never a job at a time.
    EXPECT_NE(query.find(name), std::string::npos) << query;
    EXPECT_EQ(query.find(" -j"), std::string::npos) << query;
    EXPECT_EQ(query.find("--jobs"), std::string::npos) << query;
  }
  // Polls come 1.5 s apart at the most often (after a point ended), then back off.
  EXPECT_LE(static_cast<double>(queries.size()), elapsed_s / 1.5 + 1) << read_text(log);
  // The cluster's configuration is read once; no accounting here, so no sacct beyond the probe.
  EXPECT_EQ(calls(log, "scontrol").size(), 1U) << read_text(log);
  EXPECT_LE(calls(log, "sacct").size(), 1U) << read_text(log);
  EXPECT_TRUE(calls(log, "scancel").empty());
}

// Accounting is detected, not configured: where scontrol reports an accounting storage and sacct
// answers, the harness asks sacct (here a stand-in that answers from squeue, since this cluster
// runs without slurmdbd) and never squeue.
TEST(SlurmFollowUp, WithAccountingTheSweepIsFollowedThroughSacct) {
  const fs::path dir = scratch("slurm_sacct");
  const fs::path log = dir / "calls.log";
  const fs::path bin = command_wrappers(dir, log);
  std::ofstream(bin / "scontrol") << "#!/bin/bash\necho \"job=${SLURM_JOB_ID:-none} scontrol $*\" >> '" << log.string()
                                  << "'\n/usr/bin/scontrol \"$@\" | sed 's|accounting_storage/none|accounting_storage/slurmdbd|'\n";
  std::ofstream(bin / "sacct")
      << "#!/bin/bash\necho \"job=${SLURM_JOB_ID:-none} sacct $*\" >> '" << log.string() << "'\n"
      << "name=$(printf '%s\\n' \"$@\" | sed -n 's/^--name=//p')\n"
      << "[[ -z $name ]] && exit 0\n"  // the probe
      << "exec /usr/bin/squeue --noheader --me --array --states=all --name=\"$name\" --format='%i|%T|%N'\n";
  const fs::path experiment = write_experiment(dir, four_points("array", "300"));
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log",
                                     with_path(bin));
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_EQ(read_csv(dir / "out" / "summary.csv").size(), 4U);
  EXPECT_GE(calls(log, "sacct").size(), 2U) << read_text(log);  // the probe, then the polls
  EXPECT_TRUE(calls(log, "squeue").empty()) << read_text(log);
}

TEST(SlurmFollowUp, AfterAKilledHarnessStatusCollectsAndAResumedRunSubmitsOnlyWhatIsMissing) {
  const fs::path dir = scratch("slurm_kill9");
  const fs::path log = dir / "calls.log";
  const fs::path bin = command_wrappers(dir, log);
  const fs::path experiment = write_experiment(dir, four_points("array", "600"));
  const fs::path out = dir / "out";
  {
    ChildProcess harness(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log",
                                         with_path(bin)));
    ASSERT_TRUE(wait_until([&] {
      try {
        return read_ledger(ResultsDirectory(out.string())).entries.size() == 4;
      } catch (const Error&) {
        return false;  // being written
      }
    })) << read_text(dir / "run.log");
    ::kill(harness.pid(), SIGKILL);
    ASSERT_TRUE(wait_until([&] { return harness.poll().has_value(); }));
  }
  EXPECT_EQ(calls(log, "sbatch").size(), 1U);
  // The jobs went on; status collects them as they end.
  int status = -1;
  ASSERT_TRUE(wait_until([&] {
    status = run_harness({"status", out.string()}, dir / "status.log", with_path(bin)).outcome.exit_code;
    return status != 3;
  }, 180)) << read_text(dir / "status.log");
  EXPECT_EQ(status, 0) << read_text(dir / "status.log");
  EXPECT_TRUE(fs::exists(out / "summary.csv"));
  EXPECT_NE(read_text(dir / "status.log").find("4 of 4 point(s) done (4 ok)"), std::string::npos)
      << read_text(dir / "status.log");
  // A point whose record is gone is all a resumed run submits.
  fs::path removed;
  for (const auto& entry : fs::directory_iterator(out / "points")) removed = entry.path();
  fs::remove(removed);
  const HarnessRun resumed = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "resumed.log",
                                         with_path(bin));
  EXPECT_EQ(resumed.outcome.exit_code, 0) << explained(resumed);
  EXPECT_EQ(calls(log, "sbatch").size(), 2U) << read_text(log);
  EXPECT_TRUE(fs::exists(removed));
  EXPECT_NE(joined(resumed.output).find("3 point(s) kept"), std::string::npos) << joined(resumed.output);
}

TEST(SlurmFollowUp, DetachReturnsAtOnceAndStatusFollowsToTheEnd) {
  const fs::path dir = scratch("slurm_detach");
  const fs::path experiment = write_experiment(dir, four_points("pack", "300"));
  const fs::path out = dir / "out";
  const auto start = Clock::now();
  const HarnessRun detached = run_harness({"run", experiment.string(), "--out", out.string(), "--detach"},
                                          dir / "detach.log");
  EXPECT_EQ(detached.outcome.exit_code, 0) << explained(detached);
  EXPECT_LT(seconds_since(start), 15);
  EXPECT_NE(joined(detached.output).find("4 point(s) submitted; follow them with: harness status"),
            std::string::npos) << joined(detached.output);
  EXPECT_FALSE(fs::exists(out / "summary.csv"));
  int status = -1;
  int polls = 0;
  ASSERT_TRUE(wait_until([&] {
    ++polls;
    status = run_harness({"status", out.string()}, dir / "status.log").outcome.exit_code;
    return status != 3;
  }, 180)) << read_text(dir / "status.log");
  EXPECT_EQ(status, 0) << read_text(dir / "status.log");
  EXPECT_GT(polls, 1);  // it ran in the background
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 4U);
  // And `harness cancel` on a finished sweep has nothing to do.
  const HarnessRun cancel = run_harness({"cancel", out.string()}, dir / "cancel.log");
  EXPECT_EQ(cancel.outcome.exit_code, 0);
  EXPECT_NE(joined(cancel.output).find("no jobs in flight"), std::string::npos) << joined(cancel.output);
}

// Two builds through the cluster: the records of a detached sweep say which binary each job ran,
// as it was when submitted, even when one is rebuilt before `harness status` collects them; a
// resumed run then measures again only the points of the rebuilt one.
TEST(SlurmFollowUp, DetachedBuildsAreRecordedAsSubmittedAndARebuiltOneRunsAgain) {
  const fs::path dir = scratch("slurm_builds");
  const fs::path base = copy_harness_build(dir / "base");
  const fs::path head = copy_harness_build(dir / "head");
  // Short jobs: what matters is that they are collected after head was rebuilt.
  std::string experiment_text = four_points("array", "200");
  experiment_text.replace(experiment_text.find("[4, 8, 16, 32]"), 14, "[4, 8]");
  const fs::path experiment = write_experiment(dir, experiment_text);
  const fs::path out = dir / "out";
  const std::vector<std::string> builds = {"--build", "base=" + base.string(), "--build", "head=" + head.string()};
  std::vector<std::string> arguments = {"run", experiment.string(), "--out", out.string(), "--detach"};
  arguments.insert(arguments.end(), builds.begin(), builds.end());
  const HarnessRun detached = run_harness(arguments, dir / "detach.log");
  ASSERT_EQ(detached.outcome.exit_code, 0) << explained(detached);
  const JobLedger ledger = read_ledger(ResultsDirectory(out.string()));
  ASSERT_EQ(ledger.entries.size(), 4U);
  std::map<std::string, std::string> submitted;  // build -> fingerprint
  for (const auto& entry : ledger.entries) {
    ASSERT_TRUE(entry.build.has_value());
    EXPECT_EQ(entry.build->fingerprint.size(), 16U);
    submitted[entry.build->name] = entry.build->fingerprint;
  }
  // Head rebuilt: another binary at the same path (running jobs keep the old one).
  const fs::path rebuilt = dir / "head" / "rebuilt";
  fs::copy_file(HARNESS_BINARY, rebuilt);
  std::ofstream(rebuilt, std::ios::app) << "rebuilt";
  fs::rename(rebuilt, head);

  int status = -1;
  ASSERT_TRUE(wait_until([&] {
    status = run_harness({"status", out.string()}, dir / "status.log").outcome.exit_code;
    return status != 3;
  }, 180)) << read_text(dir / "status.log");
  EXPECT_EQ(status, 0) << read_text(dir / "status.log");
  const std::vector<Json> done = records(out);
  ASSERT_EQ(done.size(), 4U);
  for (const Json& record : done) {
    const std::string build = record["build"]["name"];
    EXPECT_EQ(record["build"]["fingerprint"], submitted[build]) << record["build"].dump();
    EXPECT_EQ(record["build"]["path"], (build == "base" ? base : head).string());
  }
  std::vector<std::string> resume = {"run", experiment.string(), "--out", out.string()};
  resume.insert(resume.end(), builds.begin(), builds.end());
  const HarnessRun resumed = run_harness(resume, dir / "resumed.log");
  EXPECT_EQ(resumed.outcome.exit_code, 0) << explained(resumed);
  EXPECT_NE(joined(resumed.output).find("2 point(s) kept"), std::string::npos) << joined(resumed.output);
  for (const Json& record : records(out)) {
    if (record["build"]["name"] == "head") {
      EXPECT_NE(record["build"]["fingerprint"], submitted["head"]);
    }
  }
}

TEST(SlurmFollowUp, CancelStopsTheJobsInFlightAndTheirPointsRunAgainOnResume) {
  const fs::path dir = scratch("slurm_cancel");
  const fs::path experiment = write_experiment(dir, four_points("array", "60000"));
  const fs::path out = dir / "out";
  const HarnessRun detached = run_harness({"run", experiment.string(), "--out", out.string(), "--detach"},
                                          dir / "detach.log");
  ASSERT_EQ(detached.outcome.exit_code, 0) << explained(detached);
  const HarnessRun cancel = run_harness({"cancel", out.string()}, dir / "cancel.log");
  EXPECT_EQ(cancel.outcome.exit_code, 0) << explained(cancel);
  EXPECT_NE(joined(cancel.output).find("cancelled 4 job(s)"), std::string::npos) << joined(cancel.output);
  EXPECT_TRUE(read_ledger(ResultsDirectory(out.string())).entries.empty());
  EXPECT_FALSE(fs::exists(out / "points") && !fs::is_empty(out / "points"));
  // Nothing of the sweep is left in the queue.
  ASSERT_EQ(run_harness({"status", out.string()}, dir / "status.log").outcome.exit_code, 3);
  EXPECT_NE(read_text(dir / "status.log").find("0 of 4 point(s) done (0 ok), 0 in flight, 4 not submitted"),
            std::string::npos) << read_text(dir / "status.log");
}

// A data file whose name is shell code: it reaches the job script (in the point's settings) and
// must arrive at the rank program as a name, never run.
TEST(SlurmFollowUp, ExperimentValuesThatAreShellCodeAreQuotedOrRefusedAndNeverRun) {
  const fs::path dir = scratch("slurm_hostile");
  const fs::path data = dir / "iris$(touch MARKER1)`touch MARKER2`;touch MARKER3;'x\".csv";
  fs::copy_file(fs::path(HARNESS_SOURCE_DIR) / "data" / "iris.csv", data);
  Json experiment = Json::parse(R"({"name": "hostile", "launcher": {"name": "slurm", "mode": "pack"},
    "settings": {"workload": "iris_mlp", "epochs": 5, "timeout_s": 120}})");
  experiment["settings"]["data_path"] = data.string();
  const fs::path path = write_experiment(dir, experiment.dump());
  const HarnessRun run = run_harness({"run", path.string(), "--out", (dir / "out").string()}, dir / "run.log");
  EXPECT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_EQ(read_csv(dir / "out" / "summary.csv").at(0).at("status"), "ok");
  for (const char* marker : {"MARKER1", "MARKER2", "MARKER3"}) {
    EXPECT_FALSE(fs::exists(dir / marker)) << marker;
    EXPECT_FALSE(fs::exists(fs::current_path() / marker)) << marker;
  }
  // Launcher options that would be code in a script are refused before anything runs.
  int attempt = 0;
  for (const char* partition : {"debug$(touch MARKER4)", "debug`id`", "debug;id", "debug\nid", "debug'x"}) {
    Json bad = experiment;
    bad["launcher"]["partition"] = partition;
    const fs::path bad_path = write_experiment(dir, bad.dump());
    const HarnessRun refused = run_harness({"run", bad_path.string(), "--out", (dir / "bad").string()},
                                           dir / ("bad" + std::to_string(++attempt) + ".log"));
    EXPECT_EQ(refused.outcome.exit_code, 2) << joined(refused.output);
    ASSERT_EQ(refused.output.size(), 1U) << joined(refused.output);
    EXPECT_NE(refused.output[0].find("launcher.partition: expected a SLURM name"), std::string::npos)
        << refused.output[0];
    EXPECT_FALSE(fs::exists(dir / "bad"));
  }
}

// `harness run` as a batch job of its own: the local launcher starts ranks with srun there.
TEST(SlurmFollowUp, InsideAnAllocationTheLocalLauncherStartsRanksWithSrun) {
  const fs::path dir = scratch("slurm_inside");
  const fs::path experiment = write_experiment(dir, R"({"name": "inside",
    "settings": {"workload": "iris_mlp", "epochs": 5, "ranks": 2, "nodes": 2, "timeout_s": 120}})");
  const fs::path script = dir / "job.sh";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks=2\n"
                        << "'" << HARNESS_BINARY << "' run '" << experiment.string() << "' --out '"
                        << (dir / "out").string() << "'\necho \"exit $?\" > '" << (dir / "done").string() << "'\n";
  ASSERT_EQ(run_command({"sbatch", "--parsable", "--chdir=" + dir.string(),
                                "--output=" + (dir / "batch.out").string(), script.string()},
                               dir / "sbatch.log"),
            0);
  ASSERT_TRUE(wait_until([&] { return fs::exists(dir / "done"); }, 180)) << read_text(dir / "batch.out");
  EXPECT_EQ(read_text(dir / "done"), "exit 0\n") << read_text(dir / "batch.out");
  fs::path record;
  for (const auto& entry : fs::directory_iterator(dir / "out" / "points")) record = entry.path();
  const Json json = read_json_file(record.string());
  const auto command = json["launch"]["command"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(command.begin(), command.end(), "srun"), command.end()) << json["launch"]["command"];
  EXPECT_EQ(json["launch"]["scheduler"], "local");
  EXPECT_EQ(json["measurements"]["hosts"], Json::array({"hnode1", "hnode2"}));
}

// In an allocation of both CPUs of each node (SLURM_JOB_CPUS_PER_NODE "2(x2)"), a point of one
// rank on each node gives each rank its node's 2 CPUs, not this machine's 2 over both ranks.
TEST(SlurmFollowUp, InsideAnAllocationEachNodesCpusAreItsRanks) {
  const fs::path dir = scratch("slurm_inside_cpus");
  const fs::path experiment = write_experiment(dir, R"({"name": "inside_cpus",
    "settings": {"workload": "iris_mlp", "epochs": 2, "ranks": 2, "nodes": 2, "timeout_s": 120}})");
  const fs::path script = dir / "job.sh";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=2\n"
                        << "echo \"cpus per node: $SLURM_JOB_CPUS_PER_NODE\"\n"
                        << "'" << HARNESS_BINARY << "' run '" << experiment.string() << "' --out '"
                        << (dir / "out").string() << "'\necho \"exit $?\" > '" << (dir / "done").string() << "'\n";
  ASSERT_EQ(run_command({"sbatch", "--parsable", "--chdir=" + dir.string(), "--output=" + (dir / "batch.out").string(),
                         script.string()},
                        dir / "sbatch.log"),
            0);
  ASSERT_TRUE(wait_until([&] { return fs::exists(dir / "done"); }, 180)) << read_text(dir / "batch.out");
  EXPECT_EQ(read_text(dir / "done"), "exit 0\n") << read_text(dir / "batch.out");
  EXPECT_NE(read_text(dir / "batch.out").find("cpus per node: 2(x2)"), std::string::npos)
      << read_text(dir / "batch.out");
  fs::path record;
  for (const auto& entry : fs::directory_iterator(dir / "out" / "points")) record = entry.path();
  const Json json = read_json_file(record.string());
  EXPECT_EQ(json["launch"]["threads_per_rank"], 2) << json["launch"]["command"];
  const auto command = json["launch"]["command"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(command.begin(), command.end(), "HARNESS_THREADS_PER_RANK=2"), command.end())
      << json["launch"]["command"];
  EXPECT_FALSE(json["measurements"].contains("oversubscribed")) << json["measurements"]["oversubscribed"];
}

}  // namespace
}  // namespace harness::e2e
