// End to end: results directories: reuse, resume, interrupts, plans, default places.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "backends/registry.h"
#include "backends/device_staging.h"
#include "backends/gloo_allreduce.h"
#include "backends/gradient_sync.h"
#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

TEST(EndToEnd, ResultsOfOneStudyAreNotSilentlyReplaced) {
  const fs::path dir = scratch("foreign");
  const fs::path first = write_experiment(dir, R"({
    "name": "first",
    "settings": {"workload": "iris_mlp", "engine": "blas", "epochs": 1},
    "sweep": {"seed": [1, 2]}})");
  const fs::path out = dir / "out";
  HarnessRun run = run_harness({"run", first.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const std::string summary = read_text(out / "summary.csv");

  fs::create_directories(dir / "other");
  const fs::path second = dir / "other" / "second.json";
  std::ofstream(second) << R"({"name": "second", "settings": {"workload": "iris_mlp", "epochs": 1}})";
  run = run_harness({"run", second.string(), "--out", out.string()}, dir / "log2");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("holds the results of experiment \"first\", not \"second\""),
            std::string::npos)
      << run.output[0];
  EXPECT_EQ(read_text(out / "summary.csv"), summary);

  fs::create_directories(dir / "unrelated");
  std::ofstream(dir / "unrelated" / "notes.txt") << "mine";
  run = run_harness({"run", second.string(), "--out", (dir / "unrelated").string()}, dir / "log3");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  EXPECT_NE(joined(run.output).find("not a results directory"), std::string::npos) << joined(run.output);
  EXPECT_FALSE(fs::exists(dir / "unrelated" / "points"));

  const auto records = std::vector<fs::directory_entry>(fs::directory_iterator(out / "points"), {});
  ASSERT_EQ(records.size(), 2U);
  std::ofstream(records[0].path()) << "{\"garb";
  run = run_harness({"plot", out.string()}, dir / "log4");
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find(records[0].path().filename().string() + ": not a readable point record"),
            std::string::npos)
      << run.output[0];
  EXPECT_EQ(read_text(out / "summary.csv"), summary);
}

TEST(EndToEnd, PlanListsThePointsWithoutRunningThem) {
  const fs::path dir = scratch("plan");
  const fs::path experiment =
      write_experiment(dir, R"({"name": "p", "sweep": {"ranks": [1, 2, 4], "lr": [0.1, 0.5]}})");
  const HarnessRun run = run_harness({"plan", experiment.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const std::string text = joined(run.output);
  EXPECT_NE(text.find("6 point(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("14 rank-slot(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks=4 lr=0.5"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "results")) << "plan wrote results";
}

TEST(EndToEnd, DefaultResultsDirectoryIsUnderResultsByNameAndTime) {
  const fs::path dir = scratch("default_out");
  const fs::path experiment = write_experiment(dir, R"({"name": "quick", "settings": {"epochs": 1}})");
  const HarnessRun run = run_harness({"run", experiment.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  ASSERT_TRUE(fs::is_directory(dir / "results" / "quick"));
  const auto runs = fs::directory_iterator(dir / "results" / "quick");
  const fs::path first = runs->path();
  EXPECT_TRUE(fs::exists(first / "summary.csv"));
  EXPECT_EQ(first.filename().string().size(), std::string("20261122-030652").size());
}

// The experiment edited between two runs into one directory: the first run's records stay on
// disk, but the summary holds only the current points and measures them against each other.
// (A differently named experiment is refused there: ResultsOfOneStudyAreNotSilentlyReplaced.)
TEST(EndToEnd, EarlierRecordsInTheSameDirectoryAreNotBaselines) {
  const fs::path dir = scratch("reuse");
  const fs::path out = dir / "out";
  const fs::path first = dir / "first.json";
  std::ofstream(first) << R"({"name": "a", "settings": {"epochs": 2}, "sweep": {"ranks": [1, 2]}})";
  ASSERT_TRUE(run_harness({"run", first.string(), "--out", out.string()}, dir / "log1").outcome.ok());
  const fs::path second = dir / "second.json";
  std::ofstream(second) << R"({"name": "a", "settings": {"epochs": 2, "lr": 0.1}, "sweep": {"ranks": [2]}})";
  ASSERT_TRUE(run_harness({"run", second.string(), "--out", out.string()}, dir / "log2").outcome.ok());
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("speedup"), "1") << "measured against a point of another experiment";
}

// Whether a rank of a run into `out` still runs: its `harness worker` command line names a file in
// out/logs. Only this test's ranks: other tests (or users) may run ranks of their own meanwhile.
bool ranks_writing_into(const fs::path& out) {
  const std::string pattern = "[h]arness worker .*--output " + (out / "logs").string() + "/";
  return std::system(("pgrep -f '" + pattern + "' > /dev/null").c_str()) == 0;
}

// Runs `experiment` into `out` (its console into `log`), kill -9s the harness half a second into
// its second point, and checks that no rank outlived it (mpirun dies with the harness,
// PR_SET_PDEATHSIG, and its ranks with it).
void kill_the_harness_in_its_second_point(const fs::path& experiment, const fs::path& out, const fs::path& log) {
  ProcessRequest request;
  request.argv = {"sh", "-c",
                  std::string(HARNESS_BINARY) + " run " + experiment.string() + " --out " +
                      out.string() + " & pid=$!; "
                      "while ! grep -q '\\[2/2\\]' " + log.string() + "; do sleep 0.2; done; "
                      "sleep 0.5; kill -KILL $pid; wait $pid; echo \"exit=$?\""};
  request.log_path = log.string();
  request.timeout_s = 120;
  ASSERT_TRUE(run_process(request).ok());
  EXPECT_EQ(tail_lines(log.string(), 1).back(), "exit=137");
  for (int i = 0; i < 50 && ranks_writing_into(out); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ranks_writing_into(out)) << "a rank outlived the harness";
}

// Kill -9 the harness while its second point runs; running again into the same directory keeps
// the completed point (its record untouched) and runs only the missing one; a changed sweep
// adopts the completed record under its new position; --fresh runs everything again.
TEST(EndToEnd, KilledSweepResumesRunningOnlyWhatIsMissing) {
  const fs::path dir = scratch("resume");
  const fs::path experiment =
      write_experiment(dir, R"({"name": "resume", "sweep": {"epochs": [2, 300]}})");
  const fs::path out = dir / "out";
  const fs::path log = dir / "log1";
  kill_the_harness_in_its_second_point(experiment, out, log);
  if (HasFatalFailure()) return;
  ASSERT_EQ(std::distance(fs::directory_iterator(out / "points"), fs::directory_iterator()), 1);
  const fs::path first_record = fs::directory_iterator(out / "points")->path();
  const Json before = read_json_file(first_record.string());
  // Rank slots as a run killed before its rank 0 wrote any measurements leaves them.
  const std::string killed_line = read_text(log);
  const std::size_t killed_at = killed_line.find("[2/2] ");
  ASSERT_NE(killed_at, std::string::npos);
  const std::string killed_id = killed_line.substr(killed_at + 6, killed_line.find(' ', killed_at + 6) - killed_at - 6);
  const fs::path leftover = out / "logs" / (killed_id + ".20200101T000000Z-1.measurements.json.where");
  fs::create_directories(leftover);
  std::ofstream(leftover / "0") << "slot";

  HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log2");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_NE(joined(run.output).find("[1/2] " + before["id"].get<std::string>()), std::string::npos);
  EXPECT_NE(run.output.at(1).find("kept (completed in an earlier run)"), std::string::npos)
      << joined(run.output);
  EXPECT_EQ(read_json_file(first_record.string()), before) << "the completed record was rewritten";
  auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[1].at("status"), "ok");
  // The killed run's rank slots are gone, whether or not its rank 0 had written measurements.
  for (const auto& entry : fs::directory_iterator(out / "logs")) {
    EXPECT_EQ(entry.path().string().find(".where"), std::string::npos) << entry.path();
  }

  // The completed points move to their new positions in a changed sweep.
  std::ofstream(experiment) << R"({"name": "resume", "sweep": {"epochs": [1, 2, 300]}})";
  run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log3");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const auto kept_line = std::find_if(run.output.begin(), run.output.end(), [](const std::string& line) {
    return line.rfind("[2/3] p001-", 0) == 0;
  });
  ASSERT_NE(kept_line, run.output.end()) << joined(run.output);
  EXPECT_NE(kept_line->find("kept"), std::string::npos) << *kept_line;
  rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[1].at("epochs"), "2");
  EXPECT_FALSE(fs::exists(first_record)) << "the record of the old position is left behind";

  run = run_harness({"run", experiment.string(), "--out", out.string(), "--fresh"}, dir / "log4");
  ASSERT_TRUE(run.outcome.ok());
  EXPECT_EQ(joined(run.output).find("kept"), std::string::npos) << "--fresh kept a point";
}

// The same for scheme async_ps, whose ranks poll rather than block: killed while its second point
// trains, no rank outlives the harness, and the next run keeps the first point and completes the
// second.
TEST(EndToEnd, AKilledAsyncPsSweepResumes) {
  const fs::path dir = scratch("resume_async_ps");
  const fs::path experiment = write_experiment(dir, R"({"name": "resume", "settings": {"scheme": "async_ps",
    "backend": "ps", "ranks": 3, "threads_per_rank": 1, "max_staleness": 1}, "sweep": {"epochs": [2, 300]}})");
  const fs::path out = dir / "out";
  const fs::path log = dir / "log1";
  kill_the_harness_in_its_second_point(experiment, out, log);
  if (HasFatalFailure()) return;
  ASSERT_EQ(std::distance(fs::directory_iterator(out / "points"), fs::directory_iterator()), 1);

  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log2");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const std::string output = joined(run.output);
  EXPECT_NE(output.find("kept (completed in an earlier run)"), std::string::npos) << output;
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[1].at("status"), "ok");
  EXPECT_EQ(rows[1].at("epochs"), "300");
}

TEST(EndToEnd, InterruptKeepsCompletedPointsAndExits130) {
  const fs::path dir = scratch("interrupt");
  // The first point finishes in about a second; the second would run for minutes.
  const fs::path experiment = write_experiment(dir, R"({
    "name": "interrupt", "sweep": {"epochs": [2, 50000]}})");
  const fs::path out = dir / "out";
  const fs::path log = dir / "log";
  ProcessRequest request;
  request.argv = {"sh", "-c",
                  std::string(HARNESS_BINARY) + " run " + experiment.string() + " --out " +
                      out.string() + " & pid=$!; "
                      // Wait until the second point is running, then press Ctrl-C.
                      "while ! grep -q '\\[2/2\\]' " + log.string() + "; do sleep 0.2; done; "
                      "sleep 1; kill -INT $pid; wait $pid; echo \"exit=$?\""};
  request.log_path = log.string();
  request.timeout_s = 120;
  ASSERT_TRUE(run_process(request).ok());
  const auto lines = tail_lines(log.string(), 200);
  EXPECT_EQ(lines.back(), "exit=130") << joined(lines);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U) << "the interrupted point must leave no record";
  EXPECT_EQ(rows[0].at("status"), "ok");
  EXPECT_EQ(rows[0].at("epochs"), "2");
  EXPECT_TRUE(fs::exists(out / "plots" / "loss.png"));
  EXPECT_FALSE(ranks_writing_into(out)) << "a rank outlived Ctrl-C";
}

}  // namespace
}  // namespace harness::e2e
