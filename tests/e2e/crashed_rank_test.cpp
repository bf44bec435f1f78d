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

// Scheme async_ps: a server that dies (SIGKILL: no crash report of its own) or a worker that
// crashes (SIGSEGV) in the middle of training fails the point with that rank as its reason, and
// nobody waits for it: the other ranks are stopped, none left polling.
TEST(CrashedRank, AnAsyncPsServerOrWorkerFailsThePointWithItsReasonAndNoHang) {
  for (const auto& [victim, signal, reason] : {std::tuple{0, SIGKILL, "rank 0 killed by signal 9"},
                                               std::tuple{2, SIGSEGV, "rank 2: SIGSEGV"}}) {
    const fs::path dir = scratch("crashed_async_ps_" + std::to_string(victim));
    const fs::path experiment = write_experiment(
        dir, R"({"name": "crashed", "settings": {"workload": "iris_mlp", "scheme": "async_ps", "backend": "ps",
                 "epochs": 100000, "ranks": 3, "threads_per_rank": 1, "timeout_s": 120}})");
    const fs::path out = dir / "out";
    ChildProcess run(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log"));
    ASSERT_TRUE(within_a_minute([&] { return progress_lines(out) >= 3; })) << read_text(dir / "run.log");
    const pid_t rank = find_rank_process(victim);
    ASSERT_NE(rank, 0);
    ASSERT_EQ(::kill(rank, signal), 0);
    std::optional<ProcessOutcome> ended;
    ASSERT_TRUE(within_a_minute([&] { return (ended = run.poll()).has_value(); })) << "rank " << victim;
    EXPECT_EQ(ended->exit_code, 1);
    const auto rows = read_csv(out / "summary.csv");
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].at("status"), "failed");
    EXPECT_EQ(rows[0].at("reason").rfind(reason, 0), 0U)
        << rows[0].at("reason") << "\n"
        << read_text(out / "logs" / (rows[0].at("id") + ".log"));
    for (int other = 0; other < 3; ++other) EXPECT_EQ(find_rank_process(other), 0) << "rank " << other << " left";
  }
}

// A killed pipeline stage: the last stage (rank 2 of 3) dies while its neighbour waits for its
// gradients, and the middle one (rank 1) faults while the others wait for its activations and
// gradients: the point fails with the victim's reason, and no rank is left waiting.
TEST(CrashedRank, AKilledPipelineStageFailsThePointWithItsReasonAndNoHang) {
  for (const auto& [victim, signal, reason] : {std::tuple{2, SIGKILL, "rank 2 killed by signal 9"},
                                               std::tuple{1, SIGSEGV, "rank 1: SIGSEGV"}}) {
    const fs::path dir = scratch("crashed_pipeline_" + std::to_string(victim));
    const fs::path experiment = write_experiment(
        dir, R"({"name": "crashed", "settings": {"workload": "iris_mlp", "scheme": "pipeline", "pipeline_stages": 3,
                 "batch_size": 8, "epochs": 100000, "ranks": 3, "threads_per_rank": 1, "timeout_s": 120}})");
    const fs::path out = dir / "out";
    ChildProcess run(harness_request({"run", experiment.string(), "--out", out.string()}, dir / "run.log"));
    ASSERT_TRUE(within_a_minute([&] { return progress_lines(out) >= 3; })) << read_text(dir / "run.log");
    const pid_t rank = find_rank_process(victim);
    ASSERT_NE(rank, 0);
    ASSERT_EQ(::kill(rank, signal), 0);
    std::optional<ProcessOutcome> ended;
    ASSERT_TRUE(within_a_minute([&] { return (ended = run.poll()).has_value(); })) << "rank " << victim;
    EXPECT_EQ(ended->exit_code, 1);
    const auto rows = read_csv(out / "summary.csv");
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].at("status"), "failed");
    EXPECT_EQ(rows[0].at("reason").rfind(reason, 0), 0U)
        << rows[0].at("reason") << "\n"
        << read_text(out / "logs" / (rows[0].at("id") + ".log"));
    for (int other = 0; other < 3; ++other) EXPECT_EQ(find_rank_process(other), 0) << "rank " << other << " left";
  }
}

}  // namespace
}  // namespace harness::e2e
