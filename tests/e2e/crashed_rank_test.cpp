// End to end: a rank that crashes is the point's reason, not the errors its peers report after it.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <tuple>
#include <thread>

#include "e2e_helpers.h"
#include "harness/common/clock.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

// Whether `ready` becomes true within 60 s.
bool within_a_minute(const std::function<bool()>& ready) {
  const auto start = Clock::now();
  while (seconds_since(start) < 60) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The most lines any point log under `out` has (of its last 10): rank 0 writes a progress line
// about once a second, so 3 of them mean the point is in the middle of training.
std::size_t progress_lines(const fs::path& out) {
  std::size_t lines = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out / "logs", error)) {
    if (entry.path().extension() == ".log") lines = std::max(lines, tail_lines(entry.path().string(), 10).size());
  }
  return lines;
}

// A rank that crashes takes its peers down after it: with gloo they lose their connections and
// say so ("Connection reset by peer"), after its crash report and its backtrace, which push the
// report out of the log's last 20 lines. The reason names the crash, not a peer's error (the
// reason of 10705f8: "rank 0: gloo allreduce failed: ... Connection reset by peer").
TEST(CrashedRank, IsTheReasonNotItsPeersFollowOnErrors) {
  const fs::path dir = scratch("crashed");
  const fs::path experiment = write_experiment(
      dir, R"({"name": "crashed", "settings": {"workload": "iris_mlp", "backend": "gloo", "epochs": 100000,
               "ranks": 3, "threads_per_rank": 1, "timeout_s": 120}})");
  const fs::path out = dir / "out";
  ChildProcess run(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log"));
  // Crash in the middle of training.
  ASSERT_TRUE(within_a_minute([&] { return progress_lines(out) >= 3; })) << read_text(dir / "run.log");
  const pid_t rank_one = find_rank_process(1);
  ASSERT_NE(rank_one, 0);
  ASSERT_EQ(::kill(rank_one, SIGSEGV), 0);
  std::optional<ProcessOutcome> ended;
  ASSERT_TRUE(within_a_minute([&] { return (ended = run.poll()).has_value(); }));
  EXPECT_EQ(ended->exit_code, 1);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("reason").rfind("rank 1: SIGSEGV (segmentation fault) at address ", 0), 0U)
      << rows[0].at("reason") << "\n"
      << read_text(out / "logs" / (rows[0].at("id") + ".log"));
}

// Runs `settings` (a training point of 3 ranks that runs until killed) and, once it has made
// progress, kills rank `victim` with `signal`: the point fails with a reason starting `reason`, and
// no rank is left behind.
struct Victim {
  int rank;
  int signal;
  const char* reason;
};
void expect_a_killed_rank_fails_the_point(const std::string& name, const std::string& settings, const Victim& victim) {
  const fs::path dir = scratch(name + "_" + std::to_string(victim.rank));
  const fs::path experiment = write_experiment(dir, R"({"name": "crashed", "settings": )" + settings + "}");
  const fs::path out = dir / "out";
  ChildProcess run(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log"));
  ASSERT_TRUE(within_a_minute([&] { return progress_lines(out) >= 3; })) << read_text(dir / "run.log");
  const pid_t rank = find_rank_process(victim.rank);
  ASSERT_NE(rank, 0);
  ASSERT_EQ(::kill(rank, victim.signal), 0);
  std::optional<ProcessOutcome> ended;
  ASSERT_TRUE(within_a_minute([&] { return (ended = run.poll()).has_value(); })) << "rank " << victim.rank;
  EXPECT_EQ(ended->exit_code, 1);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("status"), "failed");
  EXPECT_EQ(rows[0].at("reason").rfind(victim.reason, 0), 0U)
      << rows[0].at("reason") << "\n"
      << read_text(out / "logs" / (rows[0].at("id") + ".log"));
  for (int other = 0; other < 3; ++other) EXPECT_EQ(find_rank_process(other), 0) << "rank " << other << " left";
}

// async_ps: its server killed while the workers wait for it, a worker faulting while the server
// waits for its gradient.
TEST(CrashedRank, AnAsyncPsServerOrWorkerFailsThePointWithItsReasonAndNoHang) {
  for (const Victim& victim : {Victim{0, SIGKILL, "rank 0 killed by signal 9"}, Victim{2, SIGSEGV, "rank 2: SIGSEGV"}}) {
    expect_a_killed_rank_fails_the_point("crashed_async_ps",
                                         R"({"workload": "iris_mlp", "scheme": "async_ps", "backend": "ps",
                                             "epochs": 100000, "ranks": 3, "threads_per_rank": 1, "timeout_s": 120})",
                                         victim);
  }
}

// A killed pipeline stage: the last stage (rank 2 of 3) dies while its neighbour waits for its
// gradients, and the middle one (rank 1) faults while the others wait for its activations and
// gradients.
TEST(CrashedRank, AKilledPipelineStageFailsThePointWithItsReasonAndNoHang) {
  for (const Victim& victim : {Victim{2, SIGKILL, "rank 2 killed by signal 9"}, Victim{1, SIGSEGV, "rank 1: SIGSEGV"}}) {
    expect_a_killed_rank_fails_the_point("crashed_pipeline",
                                         R"({"workload": "iris_mlp", "scheme": "pipeline", "pipeline_stages": 3,
                                             "batch_size": 8, "epochs": 100000, "ranks": 3, "threads_per_rank": 1,
                                             "timeout_s": 120})",
                                         victim);
  }
}

}  // namespace
}  // namespace harness::e2e
