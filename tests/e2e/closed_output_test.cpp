// End to end: a harness whose standard output goes away. `harness run X | head -2` runs every
// point; a Ctrl-C that ends `| tee log` before the harness leaves it to stop as on any Ctrl-C: the
// interrupted line said where it can be, summary.csv, stats.csv and report.html written, and
// through SLURM no cancelled job left in the ledger for `harness status` to call cancelled.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "e2e_helpers.h"
#include "fake_slurm.h"
#include "harness/common/clock.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/common/text.h"

namespace harness::e2e {
namespace {

// Three Iris points of one epoch: a second or two each.
const char* kThreeIrisPoints = R"({"name": "piped", "settings": {"workload": "iris_mlp", "engine": "blas",
  "epochs": 1, "threads_per_rank": 1}, "sweep": {"batch_size": [4, 8, 16]}})";

// bash running `script` with SIGPIPE at its default, as in a terminal, whatever the test runner set
// (bash cannot undo a SIGPIPE ignored when it starts).
ProcessRequest shell(const std::string& script, const std::vector<std::string>& arguments, const fs::path& log,
                     const std::vector<std::pair<std::string, std::string>>& environment = {}) {
  ProcessRequest request;
  request.argv = {"env", "--default-signal=PIPE", "bash", "-c", script, "shell"};
  request.argv.insert(request.argv.end(), arguments.begin(), arguments.end());
  request.log_path = log.string();
  request.working_directory = log.parent_path().string();
  request.environment = environment;
  request.timeout_s = 300;
  return request;
}

// Waits up to a minute for `done`; false when it never came.
template <typename Done>
bool wait_for(Done done) {
  const auto start = Clock::now();
  while (!done()) {
    if (seconds_since(start) > 60) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

int read_pid(const fs::path& file) {
  const std::string text = read_text(file);
  return text.empty() ? 0 : std::stoi(text);
}

// The harness's stdout into `tee DIR/stdout` (its stderr into DIR/stderr), in the background; the
// pids of both in DIR/harness.pid and DIR/tee.pid, the harness's exit status in DIR/status.
constexpr const char* kIntoTee = R"(set -u
dir=$1; shift
( sh -c 'echo $$ > "$0/harness.pid"; exec "$@" 2> "$0/stderr"' "$dir" "$@"; echo $? > "$dir/status" ) |
  tee "$dir/stdout" > /dev/null &
echo $! > "$dir/tee.pid"
wait
)";

// Ctrl-C in a terminal reaches tee and the harness alike, and tee, dying of it, may go first: it
// is ended here first (SIGTERM: bash started it in the background, where SIGINT is ignored), then
// the harness is interrupted. Returns the harness's exit status.
std::string interrupt_after_tee(const fs::path& dir, ChildProcess& pipeline) {
  EXPECT_TRUE(wait_for([&] { return read_pid(dir / "tee.pid") > 0 && read_pid(dir / "harness.pid") > 0; }));
  ::kill(read_pid(dir / "tee.pid"), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(read_pid(dir / "harness.pid"), SIGINT);
  std::optional<ProcessOutcome> ended;
  EXPECT_TRUE(wait_for([&] { return (ended = pipeline.poll()).has_value(); })) << read_text(dir / "stderr");
  return read_text(dir / "status");
}

TEST(ClosedOutput, ARunPipedIntoHeadRunsEveryPointAndWritesItsFiles) {
  const fs::path dir = scratch("closed_output_head");
  const fs::path experiment = write_experiment(dir, kThreeIrisPoints);
  const fs::path out = dir / "out";
  const ProcessOutcome outcome =
      run_process(shell(R"("$1" run "$2" --out "$3" | head -2 > "$4/head.txt"
echo "${PIPESTATUS[0]}" > "$4/status")",
                        {HARNESS_BINARY, experiment.string(), out.string(), dir.string()}, dir / "run.log"));
  ASSERT_TRUE(outcome.ok()) << outcome.describe() << "\n" << read_text(dir / "run.log");
  EXPECT_EQ(read_text(dir / "status"), "0\n") << "the harness died when head went away:\n"
                                              << read_text(dir / "run.log");
  EXPECT_EQ(split_lines(read_text(dir / "head.txt")).size(), 2U) << read_text(dir / "head.txt");
  std::size_t records = 0;
  for (const auto& entry : fs::directory_iterator(out / "points")) {
    EXPECT_EQ(read_json_file(entry.path().string())["status"], "ok") << entry.path();
    ++records;
  }
  EXPECT_EQ(records, 3U) << "not every point ran:\n" << read_text(dir / "run.log");
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 3U);
  EXPECT_EQ(read_csv(out / "stats.csv").size(), 3U);
  EXPECT_TRUE(fs::exists(out / "report.html"));
  EXPECT_NE(read_text(dir / "run.log").find("harness: warning: standard output could not be written to the end"),
            std::string::npos)
      << read_text(dir / "run.log");
}

TEST(ClosedOutput, CtrlCThatEndedTeeFirstStillWritesTheInterruptedLineAndTheFiles) {
  const fs::path dir = scratch("closed_output_tee");
  const fs::path experiment = write_experiment(dir, kThreeIrisPoints);
  const fs::path out = dir / "out";
  // The first point runs; once DIR/hang exists, the next never ends on its own.
  fs::create_directories(dir / "bin");
  const std::string real_mpirun = find_program("mpirun");
  ASSERT_FALSE(real_mpirun.empty());
  std::ofstream(dir / "bin" / "mpirun") << "#!/bin/sh\nif [ -e " << (dir / "hang").string()
                                        << " ]; then exec sleep 600; fi\nexec " << real_mpirun << " \"$@\"\n";
  fs::permissions(dir / "bin" / "mpirun", fs::perms::owner_all);
  ChildProcess pipeline(shell(kIntoTee,
                              {dir.string(), HARNESS_BINARY, "run", experiment.string(), "--out", out.string()},
                              dir / "run.log", {{"PATH", (dir / "bin").string() + ":" + std::getenv("PATH")}}));
  ASSERT_TRUE(wait_for([&] { return read_text(dir / "stdout").find(" ok (") != std::string::npos; }))
      << read_text(dir / "stdout") << read_text(dir / "stderr");
  std::ofstream(dir / "hang") << "";
  ASSERT_TRUE(wait_for([&] { return read_text(dir / "stdout").find("[2/3]") != std::string::npos; }))
      << read_text(dir / "stdout");
  const std::string status = interrupt_after_tee(dir, pipeline);
  EXPECT_EQ(status, "130\n") << read_text(dir / "stderr");
  EXPECT_NE(read_text(dir / "stderr").find("harness: interrupted; keeping the points completed so far"),
            std::string::npos)
      << read_text(dir / "stderr");
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 1U);
  EXPECT_TRUE(fs::exists(out / "stats.csv"));
  EXPECT_TRUE(fs::exists(out / "report.html"));
}

TEST(ClosedOutput, CtrlCThatEndedTeeFirstLeavesNoCancelledJobsInTheLedger) {
  FakeCluster cluster = fake_cluster("closed_output", R"({"name": "slurm", "mode": "per-point",
    "start_ranks_with": "mpirun"})",
                                     2);
  ChildProcess pipeline(
      shell(kIntoTee,
            {cluster.dir.string(), HARNESS_BINARY, "run", cluster.experiment.string(), "--out", cluster.out.string()},
            cluster.dir / "run.log", cluster.environment));
  ASSERT_TRUE(wait_for([&] {
    return read_text(cluster.out / "jobs" / "ledger.json").find("1002") != std::string::npos;
  })) << read_text(cluster.dir / "stderr");
  const std::string status = interrupt_after_tee(cluster.dir, pipeline);
  EXPECT_EQ(status, "130\n") << read_text(cluster.dir / "stderr");
  EXPECT_EQ(cluster.text("scancel_calls"), "1001 1002\n");
  EXPECT_TRUE(cluster.ledger_jobs().empty()) << cluster.ledger().dump(1);
  EXPECT_TRUE(fs::exists(cluster.out / "summary.csv"));
  EXPECT_TRUE(fs::exists(cluster.out / "report.html"));
  const HarnessRun later = cluster.harness({"status", cluster.out.string()}, "status.log");
  const std::string text = joined(later.output);
  EXPECT_EQ(text.find("cancelled"), std::string::npos) << text;
  EXPECT_NE(text.find("0 of 2 point(s) done (0 ok), 0 in flight, 2 not submitted"), std::string::npos) << text;
}

}  // namespace
}  // namespace harness::e2e
