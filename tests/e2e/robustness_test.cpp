// End to end: results directories under concurrency and damage, failures that name their rank,
// older and newer records, and a dry run that starts nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "backends/registry.h"
#include "e2e_helpers.h"
#include "harness/common/clock.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/results/record.h"
#include "tests/common/read_text.h"

namespace harness::e2e {
namespace {

// Iris points long enough (a few seconds) to be caught running.
const char* kSlowIris = R"({"name": "slow", "settings": {"workload": "iris_mlp", "epochs": 400,
  "threads_per_rank": 1}, "sweep": {"batch_size": [4, 8]}})";

// Waits up to 60 s for `ready`.
template <typename Ready>
bool wait_until(Ready ready) {
  const auto start = Clock::now();
  while (seconds_since(start) < 60) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(Robustness, SecondRunIntoADirectoryInUseIsToldWhoHoldsItAndPlotStillWorks) {
  const fs::path dir = scratch("lock");
  const fs::path experiment = write_experiment(dir, kSlowIris);
  const fs::path out = dir / "out";
  ChildProcess first(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "first.log"));
  // Wait for the first point's record: the run holds the lock and has something to plot.
  ASSERT_TRUE(wait_until([&] {
    std::error_code error;
    return fs::exists(out / "points", error) && !fs::is_empty(out / "points", error);
  }));
  const HarnessRun second = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "second.log");
  EXPECT_EQ(second.outcome.exit_code, 2) << joined(second.output);
  ASSERT_EQ(second.output.size(), 1U) << joined(second.output);
  EXPECT_NE(second.output[0].find("in use by another harness run (pid "), std::string::npos) << second.output[0];
  EXPECT_NE(second.output[0].find("run " + experiment.string()), std::string::npos) << second.output[0];
  // Reading does not need the lock.
  const HarnessRun plot = run_harness({"plot", out.string()}, dir / "plot.log");
  EXPECT_EQ(plot.outcome.exit_code, 0) << explained(plot);

  std::optional<ProcessOutcome> ended;
  ASSERT_TRUE(wait_until([&] { return (ended = first.poll()).has_value(); }));
  EXPECT_TRUE(ended->ok()) << joined(tail_lines((dir / "first.log").string(), 30));
  // The first run's points are intact: both ok, neither disturbed by the second.
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) EXPECT_EQ(row.at("status"), "ok") << row.at("reason");
}

TEST(Robustness, IncompleteRecordIsSetAsideWithAWarningAndItsPointRunsAgain) {
  const fs::path dir = scratch("incomplete");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "inc", "settings": {"workload": "iris_mlp", "epochs": 2}})");
  const fs::path out = dir / "out";
  ASSERT_EQ(run_harness({"run", experiment.string(), "--out", out.string()}, dir / "1.log").outcome.exit_code, 0);
  fs::path record;
  for (const auto& entry : fs::directory_iterator(out / "points")) record = entry.path();
  Json json = read_json_file(record.string());
  json.erase("measurements");  // "status": "ok" without measurements
  std::ofstream(record) << json.dump();

  const HarnessRun again = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "2.log");
  EXPECT_EQ(again.outcome.exit_code, 0) << explained(again);
  const std::string text = joined(again.output);
  EXPECT_NE(text.find("is not a complete record (status \"ok\" without measurements); its point runs again"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("kept (completed"), std::string::npos) << text;
  EXPECT_TRUE(read_json_file(record.string()).contains("measurements"));
  EXPECT_TRUE(fs::exists(record.string() + ".unreadable"));
  EXPECT_EQ(run_harness({"plot", out.string()}, dir / "3.log").outcome.exit_code, 0);
}

// As when the kernel's OOM killer takes a rank.
TEST(Robustness, KilledRankIsNamedWithItsSignal) {
  const fs::path dir = scratch("killed");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "killed", "settings": {"workload": "iris_mlp", "epochs": 3000, "ranks": 2,
               "threads_per_rank": 1}})");
  const fs::path out = dir / "out";
  ChildProcess run(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log"));
  pid_t rank_one = 0;
  ASSERT_TRUE(wait_until([&] { return (rank_one = find_rank_process(1)) != 0; }));
  // Let it get into training, then kill it.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(rank_one, SIGKILL), 0);
  std::optional<ProcessOutcome> ended;
  ASSERT_TRUE(wait_until([&] { return (ended = run.poll()).has_value(); }));
  EXPECT_EQ(ended->exit_code, 1);
  const std::string log = joined(tail_lines((dir / "run.log").string(), 50));
  EXPECT_NE(log.find("FAILED: rank 1 killed by signal 9 (Killed)"), std::string::npos) << log;
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("reason"), "rank 1 killed by signal 9 (Killed)");
}

// A cuda_ipc rank killed in the middle of its reductions: the point fails naming it, the other
// rank does not hang, and no rank program is left. Nothing else can be left: the driver frees a
// dead process's device memory and IPC mappings, and cuda_ipc makes no file or shared-memory name.
// Needs a GPU (label gpu, tests/CMakeLists.txt); the two ranks share it when it is the only one.
TEST(GpuRobustness, KilledCudaIpcRankStopsThePointAndLeavesNoRankBehind) {
  if (const CudaStatus cuda = cuda_status(); !cuda.usable) GTEST_SKIP() << cuda.reason;
  if (const std::string reason = find_backend("cuda_ipc").unavailable_reason(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  const fs::path dir = scratch("killed_cuda_ipc");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "killed_cuda_ipc", "settings": {"kind": "comm", "device": "cuda", "backend": "cuda_ipc",
               "ranks": 2, "comm_min_bytes": 16777216, "comm_max_bytes": 16777216, "comm_iterations": 100000,
               "timeout_s": 300}})");
  const fs::path out = dir / "out";
  ChildProcess run(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log"));
  pid_t rank_one = 0;
  ASSERT_TRUE(wait_until([&] { return (rank_one = find_rank_process(1)) != 0; }));
  // Let it start CUDA, map its peer's buffer and get into the reductions (100000 of 16 MiB: many
  // seconds, even under MPS), then kill it.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  ASSERT_EQ(::kill(rank_one, SIGKILL), 0);
  std::optional<ProcessOutcome> ended;
  ASSERT_TRUE(wait_until([&] { return (ended = run.poll()).has_value(); })) << "rank 0 waits for the dead rank";
  EXPECT_EQ(ended->exit_code, 1);
  const std::string log = joined(tail_lines((dir / "run.log").string(), 50));
  EXPECT_NE(log.find("FAILED: rank 1 killed by signal 9 (Killed)"), std::string::npos) << log;
  EXPECT_EQ(find_rank_process(0), 0) << "rank 0 is still running";
  EXPECT_EQ(find_rank_process(1), 0);
}

// Beside it an ok point, which keeps its complete measurements only.
TEST(Robustness, TimedOutPointKeepsTheTailOfItsLogAndItsStepsSoFar) {
  const fs::path dir = scratch("timeout");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "timeout", "settings": {"workload": "iris_mlp", "timeout_s": 4},
               "sweep": {"epochs": [2, 60000]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log");
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);
  std::map<int, Json> by_epochs;
  for (const auto& entry : fs::directory_iterator(out / "points")) {
    const Json json = read_json_file(entry.path().string());
    by_epochs[json["settings"]["epochs"].get<int>()] = json;
  }
  ASSERT_EQ(by_epochs.size(), 2U);

  const Json& stopped = by_epochs.at(60000);
  EXPECT_EQ(stopped["status"], "timeout");
  EXPECT_NE(stopped["reason"].get<std::string>().find("timed out"), std::string::npos) << stopped["reason"];
  // The rank program's progress lines say how far it got.
  EXPECT_NE(stopped["log_tail"].dump().find("progress: epoch "), std::string::npos) << stopped["log_tail"];
  // And what it had flushed before it was stopped: steps, epochs and where its time went.
  EXPECT_TRUE(stopped["measurements"].is_null());
  ASSERT_TRUE(stopped.contains("partial_measurements")) << stopped.dump(1);
  const Json& partial = stopped["partial_measurements"];
  EXPECT_EQ(partial["complete"], false);
  EXPECT_FALSE(partial["steps"]["step_s"].empty());
  EXPECT_EQ(partial["steps"]["step_s"].size(), partial["steps"]["imbalance_s"].size());
  EXPECT_GE(partial["epochs"].size(), 1U);
  EXPECT_GT(partial["phases"]["train_s"].get<double>(), 0.0);
  EXPECT_EQ(partial["hosts"].size(), 1U);

  const Json& ok = by_epochs.at(2);
  EXPECT_EQ(ok["status"], "ok") << ok.dump(1);
  EXPECT_EQ(ok["measurements"]["complete"], true);
  EXPECT_EQ(ok["measurements"]["epochs"].size(), 2U);
  EXPECT_FALSE(ok.contains("partial_measurements"));
}

TEST(Robustness, ResultsOfThePreviousReleasePlot) {
  for (const char* fixture : {"results_v1_train", "results_v1_comm"}) {
    const fs::path dir = scratch(std::string("v1_") + fixture);
    fs::copy(fs::path(HARNESS_SOURCE_DIR) / "tests" / "fixtures" / fixture, dir / "results",
             fs::copy_options::recursive);
    // The old release's own summary: the same points, the same outcomes (the comm fixture holds
    // failed points on purpose) and the same measurements. Rows are matched by point id: the
    // order is this release's (its second repeat runs backwards), the ids are the records'. A
    // comm point has a row per message size.
    const auto row_name = [](const auto& row) {
      return row.at("id") + (row.count("bytes") > 0 ? " " + row.at("bytes") : std::string());
    };
    const auto old_rows = read_csv(dir / "results" / "summary.csv");
    std::map<std::string, std::size_t> old_row_of;
    for (std::size_t i = 0; i < old_rows.size(); ++i) old_row_of[row_name(old_rows[i])] = i;
    fs::remove(dir / "results" / "summary.csv");
    const HarnessRun plot = run_harness({"plot", (dir / "results").string()}, dir / "plot.log");
    EXPECT_EQ(plot.outcome.exit_code, 0) << fixture << "\n" << joined(plot.output);
    const auto rows = read_csv(dir / "results" / "summary.csv");
    ASSERT_EQ(rows.size(), old_rows.size()) << fixture;
    int ok = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto old_row = old_row_of.find(row_name(rows[i]));
      ASSERT_NE(old_row, old_row_of.end()) << fixture << ": " << row_name(rows[i]);
      const auto& old = old_rows[old_row->second];
      EXPECT_EQ(rows[i].at("status"), old.at("status")) << fixture;
      for (const char* column : {"time_s", "busbw_gbps", "final_loss"}) {
        if (old.count(column) > 0) {
          EXPECT_EQ(rows[i].at(column), old.at(column)) << column;
        }
      }
      ok += rows[i].at("status") == "ok" ? 1 : 0;
    }
    EXPECT_GT(ok, 0) << fixture;
    EXPECT_TRUE(fs::exists(dir / "results" / "plots")) << fixture;
  }
}

TEST(Robustness, ANegativeStepTimeIsADamagedRecordNeverATableValue) {
  const fs::path dir = scratch("negative_step");
  fs::copy(fs::path(HARNESS_SOURCE_DIR) / "tests" / "fixtures" / "results_v1_train", dir / "results",
           fs::copy_options::recursive);
  const fs::path edited = dir / "results" / "points" / "p000-1ff54276.json";
  Json record = read_json_file(edited.string());
  record["measurements"]["steps"]["step_s"][0] = -1.0;  // a hand edit: "step -1000.000 ms" before
  write_file_atomically(edited.string(), record.dump(2));
  const HarnessRun plot = run_harness({"plot", (dir / "results").string()}, dir / "plot.log");
  EXPECT_EQ(plot.outcome.exit_code, 0) << explained(plot);
  EXPECT_EQ(joined(plot.output).find("-1000"), std::string::npos) << joined(plot.output);
  const auto rows = read_csv(dir / "results" / "summary.csv");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].at("id"), "p000-1ff54276");
  EXPECT_EQ(rows[0].at("status"), "failed");
  EXPECT_EQ(rows[0].at("reason"),
            "damaged record: measurements.train.steps.step_s[0] is -1 (expected a finite time >= 0)");
  EXPECT_EQ(rows[1].at("status"), "ok");
}

TEST(Robustness, RecordOfANewerSchemaIsRefusedInOneLine) {
  const fs::path dir = scratch("newer");
  fs::copy(fs::path(HARNESS_SOURCE_DIR) / "tests" / "fixtures" / "results_v1_train", dir / "results",
           fs::copy_options::recursive);
  fs::path record;
  for (const auto& entry : fs::directory_iterator(dir / "results" / "points")) record = entry.path();
  Json json = read_json_file(record.string());
  json["schema_version"] = 99;
  std::ofstream(record) << json.dump();
  const HarnessRun plot = run_harness({"plot", (dir / "results").string()}, dir / "plot.log");
  EXPECT_EQ(plot.outcome.exit_code, 1);
  ASSERT_EQ(plot.output.size(), 1U) << joined(plot.output);
  EXPECT_NE(plot.output[0].find(fmt::format("record schema version 99 is newer than this harness reads (up to {})",
                                            kRecordSchemaVersion)),
            std::string::npos) << plot.output[0];
}

// `--ranks 1,,2` was read as 1,2: an empty item is a typo, refused in one line before any work.
TEST(Robustness, CommaListWithAnEmptyItemIsRefusedInOneLine) {
  const fs::path dir = scratch("empty_item");
  const HarnessRun run = run_harness({"model", (dir / "no_results").string(), "--ranks", "1,,2"}, dir / "model.log");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("--ranks \"1,,2\": expected items separated by single commas, got an empty item 2"),
            std::string::npos) << run.output[0];
}

// `--set data_path=/etc/shadow` once printed the file's first line, a password hash, into the
// error and so into CI logs; later, a 0644 file inside a 0700 directory still was; and the IDX
// reader printed any file's first 4 bytes ("72 6f 6f 74": "root").
TEST(Robustness, PrivateDataFileIsNeverQuotedInTheError) {
  const fs::path dir = scratch("private_data");
  const fs::path secret = dir / "secret.csv";
  const std::string line = "root:$6$saltsalt$hashhashhash:20228:0:99999:7:::\n";
  std::ofstream(secret) << line;
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  fs::create_directories(dir / "closed");
  std::ofstream(dir / "closed" / "readable.csv") << line;
  fs::permissions(dir / "closed" / "readable.csv",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace);
  fs::permissions(dir / "closed", fs::perms::owner_all, fs::perm_options::replace);
  const fs::path experiment = write_experiment(dir, R"({"name": "x", "settings": {"workload": "iris_mlp"}})");
  std::vector<fs::path> files = {secret, dir / "closed" / "readable.csv"};
  if (fs::exists("/etc/shadow")) files.emplace_back("/etc/shadow");
  for (const fs::path& file : files) {
    const HarnessRun run = run_harness(
        {"run", experiment.string(), "--set", "data_path=" + file.string(), "--out", (dir / "out").string()},
        dir / "run.log");
    EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
    ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
    EXPECT_NE(run.output[0].find(file.string() + ":1: not an Iris CSV file: expected the header"), std::string::npos)
        << run.output[0];
    EXPECT_EQ(run.output[0].find("root"), std::string::npos) << run.output[0];
    EXPECT_EQ(run.output[0].find("20228"), std::string::npos) << run.output[0];
    fs::remove(dir / "run.log");
  }
  // An MNIST data_path whose training images are that file.
  fs::create_directories(dir / "mnist");
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
    fs::copy_file(secret, dir / "mnist" / name, fs::copy_options::overwrite_existing);
  }
  const fs::path mnist = write_experiment(dir, R"({"name": "m", "settings": {"workload": "mnist_cnn"}})");
  const HarnessRun run = run_harness(
      {"run", mnist.string(), "--set", "data_path=" + (dir / "mnist").string(), "--out", (dir / "out").string()},
      dir / "mnist.log");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("train-images-idx3-ubyte: not an IDX file"), std::string::npos) << run.output[0];
  for (const char* shown : {"72 6f 6f 74", "root", "20228"}) {
    EXPECT_EQ(run.output[0].find(shown), std::string::npos) << run.output[0];
  }
}

// A fake mpirun first on PATH would leave a marker if anything started it.
TEST(Robustness, DryRunOfTheSpeedupStudyPrintsEveryCommandAndStartsNothing) {
  const fs::path dir = scratch("dry_run");
  fs::create_directories(dir / "bin");
  const fs::path marker = dir / "mpirun_was_started";
  std::ofstream(dir / "bin" / "mpirun") << "#!/bin/sh\ntouch " << marker.string() << "\n";
  fs::permissions(dir / "bin" / "mpirun", fs::perms::owner_all);
  const std::string path = (dir / "bin").string() + ":" + std::getenv("PATH");
  const fs::path experiment = fs::path(HARNESS_SOURCE_DIR) / "experiments" / "speedup.json";
  const HarnessRun run = run_harness({"run", experiment.string(), "--dry-run"}, dir / "dry.log", {{"PATH", path}});
  EXPECT_EQ(run.outcome.exit_code, 0) << explained(run);
  const std::string text = joined(run.output);
  int commands = 0;
  for (const auto& line : run.output) commands += line.rfind("    mpirun -n ", 0) == 0 ? 1 : 0;
  EXPECT_EQ(commands, 18) << text;  // 2 batch sizes × 3 rank counts × 3 repeats
  EXPECT_NE(text.find(" worker --settings '{"), std::string::npos) << text;
  EXPECT_NE(text.find("total: 18 point(s), 42 rank-slot(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("estimated time: "), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "results")) << "a dry run created a results directory";
  EXPECT_FALSE(fs::exists(marker)) << "a dry run started mpirun";
}

// Plots are an extra: a machine without gnuplot keeps the records, tables and report of a run, is
// told how to draw them later, and `harness plot` (whose whole job is drawing) fails there.
TEST(Robustness, WithoutGnuplotARunKeepsEverythingButThePlotsAndOnlyWarns) {
  const fs::path dir = scratch("no_gnuplot");
  // PATH: every program of /usr/bin (/bin is the same folder on Debian 12) but gnuplot's.
  const fs::path bin = dir / "bin";
  fs::create_directories(bin);
  for (const auto& entry : fs::directory_iterator("/usr/bin")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("gnuplot", 0) != 0) fs::create_symlink(entry.path(), bin / name);
  }
  const std::vector<std::pair<std::string, std::string>> no_gnuplot = {{"PATH", bin.string()}};
  const fs::path experiment = write_experiment(dir, R"({"name": "no_gnuplot", "settings": {"workload": "iris_mlp",
    "epochs": 2, "threads_per_rank": 1}, "sweep": {"ranks": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log", no_gnuplot);
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_NE(joined(run.output).find("harness: warning: no plots drawn (gnuplot not found on PATH); install gnuplot-nox "
                                    "(bash .ci/install-deps), then draw them with: harness plot " + out.string()),
            std::string::npos) << joined(run.output);
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 2U);
  EXPECT_TRUE(fs::exists(out / "report.html"));
  EXPECT_FALSE(fs::exists(out / "plots" / "speedup.svg"));

  const HarnessRun plot_without = run_harness({"plot", out.string()}, dir / "plot.log", no_gnuplot);
  EXPECT_EQ(plot_without.outcome.exit_code, 1) << joined(plot_without.output);
  const HarnessRun plot = run_harness({"plot", out.string()}, dir / "plot.log");
  EXPECT_EQ(plot.outcome.exit_code, 0) << joined(plot.output);
  EXPECT_TRUE(fs::exists(out / "plots" / "speedup.svg"));
}

}  // namespace
}  // namespace harness::e2e
