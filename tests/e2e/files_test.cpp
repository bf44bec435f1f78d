// End to end: the files of a results directory under hostile conditions: a record that cannot be
// written, links planted where the harness writes, outputs of `harness check` that are special
// files or the run's own, Ctrl-C under --fresh, leftovers of killed runs, a full disk.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

// One Iris point of one epoch: a second or two.
const char* kTinyIris = R"({"name": "tiny", "settings": {"workload": "iris_mlp", "engine": "blas", "epochs": 1,
  "threads_per_rank": 1}})";

// Runs the tiny experiment into DIR/out and returns DIR/out.
fs::path tiny_run(const fs::path& dir) {
  const fs::path experiment = write_experiment(dir, kTinyIris);
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log");
  EXPECT_EQ(run.outcome.exit_code, 0) << explained(run);
  return dir / "out";
}

// The one record in OUT/points.
fs::path only_record(const fs::path& out) {
  std::vector<fs::path> records;
  for (const auto& entry : fs::directory_iterator(out / "points")) records.push_back(entry.path());
  EXPECT_EQ(records.size(), 1U);
  return records.empty() ? fs::path() : records[0];
}

fs::path precious_file(const fs::path& dir) {
  std::ofstream(dir / "precious.txt") << "precious\n";
  return dir / "precious.txt";
}

// The record's directory disappears while the point runs: a fake mpirun first on PATH runs the
// real one, then puts a file where points/ was (root ignores permissions, so nothing less stops
// a write). The point must fail, its measurements stay, and the run say what is missing.
TEST(Files, PointWhoseRecordCannotBeWrittenFailsAndKeepsItsMeasurements) {
  const fs::path dir = scratch("files_unwritable_record");
  const fs::path out = dir / "out";
  fs::create_directories(dir / "bin");
  const std::string real_mpirun = find_program("mpirun");
  ASSERT_FALSE(real_mpirun.empty());
  std::ofstream(dir / "bin" / "mpirun") << "#!/bin/sh\n"
                                        << real_mpirun << " \"$@\"; status=$?\n"
                                        << "rm -rf " << (out / "points").string() << "\n"
                                        << "echo 'in the way' > " << (out / "points").string() << "\n"
                                        << "exit $status\n";
  fs::permissions(dir / "bin" / "mpirun", fs::perms::owner_all);
  const fs::path experiment = write_experiment(dir, kTinyIris);
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log",
                                     {{"PATH", (dir / "bin").string() + ":" + std::getenv("PATH")}});
  const std::string output = joined(run.output);
  EXPECT_EQ(run.outcome.exit_code, 1) << output;
  EXPECT_NE(output.find(" FAILED: its record cannot be written ("), std::string::npos) << output;
  EXPECT_EQ(output.find(" ok ("), std::string::npos) << "a lost record reported as success: " << output;
  EXPECT_NE(output.find("harness: 1 point record(s) could not be written (1 of 1 point(s) have none in " +
                        (out / "points").string() + "); what their ranks measured stays in " + (out / "logs").string()),
            std::string::npos)
      << output;
  std::vector<fs::path> measurements;
  for (const auto& entry : fs::directory_iterator(out / "logs")) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 18 && name.substr(name.size() - 18) == ".measurements.json") measurements.push_back(entry.path());
  }
  ASSERT_EQ(measurements.size(), 1U) << "rank 0's measurements were deleted with no record holding them";
  EXPECT_EQ(read_json_file(measurements[0].string())["complete"], true);
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 0U);
}

TEST(Files, LockFileThatIsALinkIsRefusedAndItsTargetUntouched) {
  const fs::path dir = scratch("files_lock_link");
  const fs::path precious = precious_file(dir);
  fs::create_directories(dir / "out");
  fs::create_symlink(precious, dir / "out" / ".lock");
  const fs::path experiment = write_experiment(dir, kTinyIris);
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("/.lock is a symbolic link, expected the lock file the harness writes"),
            std::string::npos)
      << run.output[0];
  EXPECT_EQ(read_text(precious), "precious\n");
}

TEST(Files, PlotThatIsALinkIsRefusedAndItsTargetUntouched) {
  const fs::path dir = scratch("files_plot_link");
  const fs::path out = tiny_run(dir);
  const fs::path precious = precious_file(dir);
  ASSERT_TRUE(fs::exists(out / "plots" / "speedup.svg"));
  fs::remove(out / "plots" / "speedup.svg");
  fs::create_symlink(precious, out / "plots" / "speedup.svg");
  const HarnessRun plot = run_harness({"plot", out.string()}, dir / "plot.log");
  EXPECT_EQ(plot.outcome.exit_code, 1) << joined(plot.output);
  ASSERT_FALSE(plot.output.empty());
  EXPECT_NE(plot.output.back().find("speedup.svg: is a symbolic link, expected a file the harness writes"),
            std::string::npos)
      << joined(plot.output);
  EXPECT_EQ(read_text(precious), "precious\n");
  EXPECT_TRUE(fs::is_symlink(out / "plots" / "speedup.svg"));
  for (const auto& entry : fs::directory_iterator(out / "plots")) {
    EXPECT_NE(entry.path().filename().string().rfind(".drawing-", 0), 0U) << "left behind: " << entry.path();
  }
}

// A special file would be replaced by a regular one, a link followed, the run's own files lost.
TEST(Files, CheckRefusesOutputsThatAreSpecialFilesLinksOrTheRunsOwn) {
  const fs::path dir = scratch("files_check_outputs");
  const fs::path out = tiny_run(dir);
  const fs::path precious = precious_file(dir);
  fs::create_symlink(precious, dir / "link.json");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  const std::string experiment = read_text(out / "experiment.json");
  const fs::path record = only_record(out);
  const std::string record_text = read_text(record);

  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--json", "/dev/null"}, "--json /dev/null: is a character device, expected a new file or a regular file"},
      {{"--junit", (dir / "fifo").string()}, "fifo: is a FIFO (named pipe), expected a new file or a regular file"},
      {{"--markdown", (dir / "link.json").string()}, "link.json: is a symbolic link, expected a new file"},
      {{"--json", (out / "experiment.json").string()}, "experiment.json: is a file of the results directory "},
      {{"--junit", record.string()}, ": is a file of the results directory "},
      {{"--markdown", (out / "summary.csv").string()}, "summary.csv: is a file of the results directory "}};
  int checks = 0;
  for (const auto& [arguments, expected] : refused) {
    std::vector<std::string> command = {"check", out.string(), "--baseline", out.string()};
    command.insert(command.end(), arguments.begin(), arguments.end());
    const HarnessRun check = run_harness(command, dir / ("check-" + std::to_string(++checks) + ".log"));
    EXPECT_EQ(check.outcome.exit_code, 2) << joined(check.output);
    ASSERT_EQ(check.output.size(), 1U) << joined(check.output);
    EXPECT_NE(check.output[0].find(expected), std::string::npos) << check.output[0];
  }
  struct stat info {};
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
  ASSERT_EQ(::lstat((dir / "fifo").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  EXPECT_EQ(read_text(precious), "precious\n");
  EXPECT_EQ(read_text(out / "experiment.json"), experiment);
  EXPECT_EQ(read_text(record), record_text);
  const HarnessRun plot = run_harness({"plot", out.string()}, dir / "plot.log");
  EXPECT_EQ(plot.outcome.exit_code, 0) << explained(plot);
}

// A killed run's measurements of a point are left over; the record that holds the point settles
// them when a later run keeps it. (A refused submission keeping the record and log:
// SchedulerSeam.ARunAgainReplacesTheLogOnlyWhenItsJobEnds.)
TEST(Files, AKeptRecordSettlesAKilledRunsMeasurements) {
  const fs::path dir = scratch("files_leftover_measurements");
  const fs::path out = tiny_run(dir);
  const fs::path record = only_record(out);
  const std::string before = read_text(record);
  const std::string id = record.stem().string();
  const fs::path leftover = out / "logs" / (id + ".20000101T000000Z-1.measurements.json");
  std::ofstream(leftover) << "{}";
  const fs::path leftover_log = out / "logs" / (id + ".20000101T000000Z-1.log");
  std::ofstream(leftover_log) << "a killed run's job\n";
  const HarnessRun run =
      run_harness({"run", (dir / "experiment.json").string(), "--out", out.string()}, dir / "resume.log");
  EXPECT_EQ(run.outcome.exit_code, 0) << explained(run);
  EXPECT_NE(joined(run.output).find("kept (completed in an earlier run)"), std::string::npos) << joined(run.output);
  EXPECT_EQ(read_text(record), before);
  EXPECT_FALSE(fs::exists(leftover)) << "a killed run's measurements accumulate";
  EXPECT_FALSE(fs::exists(leftover_log)) << "a killed run's job log accumulates";
  EXPECT_TRUE(fs::exists(out / "logs" / (id + ".log"))) << "the kept record's log went";
}

// Ctrl-C while --fresh runs a point again (its mpirun, a fake first on PATH, would never end):
// the point's old record and log go aside, untouched, so that this run's report does not take them
// for its own; a run without --fresh takes them back.
TEST(Files, FreshRunInterruptedSetsTheOldRecordAside) {
  const fs::path dir = scratch("files_fresh_interrupted");
  const fs::path out = tiny_run(dir);
  const fs::path record = only_record(out);
  const std::string before = read_text(record);
  const fs::path point_log = out / "logs" / (record.stem().string() + ".log");
  const std::string log_before = read_text(point_log);
  ASSERT_FALSE(log_before.empty());
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin" / "mpirun") << "#!/bin/sh\nexec sleep 600\n";
  fs::permissions(dir / "bin" / "mpirun", fs::perms::owner_all);
  const fs::path log = dir / "fresh.log";
  ChildProcess harness(harness_request({"run", (dir / "experiment.json").string(), "--out", out.string(), "--fresh"},
                                       log, {{"PATH", (dir / "bin").string() + ":" + std::getenv("PATH")}}));
  std::optional<ProcessOutcome> ended;
  for (int i = 0; i < 600 && read_text(log).find("[1/1]") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(read_text(log).find("[1/1]"), std::string::npos) << read_text(log);
  ::kill(harness.pid(), SIGINT);
  for (int i = 0; i < 600 && !(ended = harness.poll()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->exit_code, 130) << read_text(log);
  EXPECT_FALSE(fs::exists(record)) << "the earlier record passes for this run's";
  EXPECT_EQ(read_text(record.string() + ".superseded"), before) << "the old record went before a new one was written";
  EXPECT_EQ(read_text(point_log.string() + ".superseded"), log_before) << "the old record's log went";
  EXPECT_EQ(std::distance(fs::directory_iterator(out / "logs"), fs::directory_iterator()), 1)
      << "the interrupted job's log was left";
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 0U) << "this run's summary shows the earlier run's point";

  const HarnessRun resumed =
      run_harness({"run", (dir / "experiment.json").string(), "--out", out.string()}, dir / "resume.log");
  EXPECT_EQ(resumed.outcome.exit_code, 0) << explained(resumed);
  EXPECT_NE(joined(resumed.output).find("kept (completed in an earlier run)"), std::string::npos)
      << joined(resumed.output);
  EXPECT_EQ(read_text(record), before);
  EXPECT_EQ(read_text(point_log), log_before);
  EXPECT_FALSE(fs::exists(record.string() + ".superseded"));
  EXPECT_FALSE(fs::exists(point_log.string() + ".superseded"));
}

// A results directory on a nearly full disk (a 1 MiB tmpfs in a mount namespace of its own, filled
// to leave 0 to 16 pages), run again with --fresh: the point's rank cannot write its measurements,
// nor its error to the log, so mpirun's exit code was the whole reason. A failed point must say
// that the disk is full; an ok one stays ok, and a run that cannot write says why.
TEST(Files, APointThatFailsOnAFullDiskSaysSo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to mount a small file system in a namespace of its own";
  const fs::path dir = scratch("files_full_disk");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "full", "settings": {"kind": "comm", "ranks": 1, "comm_min_bytes": 4096, "comm_max_bytes": 4096}})");
  ProcessRequest probe;
  probe.argv = {"unshare", "--mount", "true"};
  probe.log_path = (dir / "probe.log").string();
  if (!run_process(probe).ok()) GTEST_SKIP() << "no mount namespace here: " << read_text(dir / "probe.log");
  const std::vector<int> free_pages = {0, 1, 2, 3, 4, 6, 8, 12, 16};
  std::ofstream(dir / "fill.sh") << R"(set -u
harness=$1 experiment=$2 copies=$3
mkdir -p "$copies/disk"
mount -t tmpfs -o size=1m tmpfs "$copies/disk" || exit 77
"$harness" run "$experiment" --out "$copies/disk/r" > "$copies/first.log" 2>&1 || { cat "$copies/first.log"; exit 1; }
for pages in )" << [&] {
    std::string list;
    for (const int pages : free_pages) list += std::to_string(pages) + " ";
    return list;
  }() << R"(; do
  rm -f "$copies/disk/filler"
  available_kib=$(df -k --output=avail "$copies/disk" | tail -n 1)
  count=$((available_kib / 4 - pages))
  if ((count > 0)); then dd if=/dev/zero of="$copies/disk/filler" bs=4k count=$count 2> /dev/null; fi
  status=0
  "$harness" run "$experiment" --out "$copies/disk/r" --fresh > "$copies/$pages.log" 2>&1 || status=$?
  echo "$status" > "$copies/$pages.status"
  mkdir -p "$copies/$pages/points"
  cp "$copies/disk/r/points/"*.json "$copies/$pages/points/" 2> /dev/null || true
done
)";
  ProcessRequest request;
  request.argv = {"unshare", "--mount", "--", "bash", (dir / "fill.sh").string(), HARNESS_BINARY,
                  experiment.string(), dir.string()};
  request.log_path = (dir / "fill.log").string();
  request.timeout_s = 300;
  const ProcessOutcome outcome = run_process(request);
  if (outcome.exit_code == 77) GTEST_SKIP() << "cannot mount a tmpfs here: " << read_text(dir / "fill.log");
  ASSERT_TRUE(outcome.ok()) << outcome.describe() << "\n" << read_text(dir / "fill.log");

  int failed_records = 0;
  for (const int pages : free_pages) {
    const std::string output = read_text(dir / (std::to_string(pages) + ".log"));
    const std::string status = read_text(dir / (std::to_string(pages) + ".status"));
    SCOPED_TRACE(std::to_string(pages) + " page(s) free, exit " + status + ":\n" + output);
    // Every failure the console reports says why: the full disk, or the write that failed.
    for (std::size_t at = output.find("FAILED"); at != std::string::npos; at = output.find("FAILED", at + 1)) {
      const std::string line = output.substr(at, output.find('\n', at) - at);
      EXPECT_TRUE(line.find("KiB free: what the job wrote there may be cut short") != std::string::npos ||
                  line.find("No space left on device") != std::string::npos)
          << line;
    }
    if (status == "0\n") {
      EXPECT_EQ(read_json_file(only_record(dir / std::to_string(pages)).string())["status"], "ok");
    } else {  // the write that failed, or the failed point's reason
      EXPECT_TRUE(output.find("No space left on device") != std::string::npos ||
                  output.find("KiB free: what the job wrote there may be cut short") != std::string::npos);
    }
    for (const auto& entry : fs::directory_iterator(dir / std::to_string(pages) / "points")) {
      const Json record = read_json_file(entry.path().string());
      if (record["status"] == "ok") continue;
      ++failed_records;
      EXPECT_NE(record["reason"].get<std::string>().find(" KiB free: what the job wrote there may be cut short"),
                std::string::npos)
          << record["reason"];
    }
  }
  EXPECT_GE(failed_records, 1) << "no fill level left room for a failed record: this test checked nothing";
}

TEST(Files, OutThatLooksLikeAnOptionIsRefused) {
  const fs::path dir = scratch("files_out_option");
  const fs::path experiment = write_experiment(dir, kTinyIris);
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", "--fresh"}, dir / "run.log");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("--fresh"), std::string::npos) << run.output[0];
  EXPECT_FALSE(fs::exists(dir / "--fresh")) << "a directory named --fresh was created";
}

}  // namespace
}  // namespace harness::e2e
