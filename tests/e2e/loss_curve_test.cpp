// End to end: what explains a study's numbers: the loss along the way (every study, one epoch or
// many), convergence across scale (a configuration that is faster but ends worse than its
// baseline is flagged), where the efficiency went, and the timeline.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/study/settings.h"

namespace harness::e2e {
namespace {

// The records' loss curves: bounded, samples seen increasing up to all the samples trained.
void expect_bounded_increasing_curve(const Json& record, int64_t samples_trained) {
  const Json& curve = record["measurements"]["loss_curve"];
  ASSERT_GT(curve.size(), 1U) << record["id"];
  EXPECT_LE(curve.size(), static_cast<std::size_t>(kLossValuesPerPoint)) << record["id"];
  for (std::size_t i = 1; i < curve.size(); ++i) {
    EXPECT_GT(curve[i]["samples_seen"].get<int64_t>(), curve[i - 1]["samples_seen"].get<int64_t>());
  }
  EXPECT_EQ(curve.back()["samples_seen"].get<int64_t>(), samples_trained) << record["id"];
}

// The README's first study is one epoch: it must still draw the loss against samples seen.
TEST(LossCurve, AOneEpochStudyDrawsTheLossAgainstSamplesSeen) {
  const fs::path dir = scratch("loss_one_epoch");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "one_epoch",
    "settings": {"workload": "iris_mlp", "epochs": 1, "lr": 0.5, "batch_size": 2},
    "sweep": {"ranks": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  for (const auto& row : read_csv(out / "summary.csv")) {
    const Json record = read_json_file((out / "points" / (row.at("id") + ".json")).string());
    expect_bounded_increasing_curve(record, 120);
    // One step per value at 60 (one rank) or 30 (two ranks) steps: below the bound.
    EXPECT_EQ(record["measurements"]["loss_curve"].size(), row.at("ranks") == "1" ? 60U : 30U);
  }
  for (const char* extension : {".png", ".svg"}) {
    const fs::path image = out / "plots" / (std::string("loss_samples") + extension);
    ASSERT_TRUE(fs::exists(image)) << image;
    EXPECT_GT(fs::file_size(image), 1000U) << image;
  }
  // The SVG has one curve per configuration, named in its key.
  const std::string svg = read_text(out / "plots" / "loss_samples.svg");
  EXPECT_NE(svg.find("ranks=1"), std::string::npos);
  EXPECT_NE(svg.find("ranks=2"), std::string::npos);
}

// A learning rate far too large ends worse than the baseline: the check must flag it in the
// console and in stats.csv. Another backend computes the same sums, so it must stay "ok".
TEST(LossCurve, ATooLargeLearningRateIsFlaggedAgainstItsBaseline) {
  const fs::path dir = scratch("loss_convergence");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "too_fast",
    "settings": {"workload": "iris_mlp", "epochs": 30, "batch_size": 4, "ranks": 2},
    "baseline": {"lr": 0.5, "backend": "allreduce"},
    "sweep": {"zip": {"lr": [0.5, 0.5, 60], "backend": ["allreduce", "ring", "allreduce"]}},
    "repeats": 2})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const std::string console = joined(run.output);
  EXPECT_NE(console.find("convergence: "), std::string::npos) << console;
  EXPECT_NE(console.find("lr=60.0: worse loss"), std::string::npos) << console;
  // (The straggler table may name the ring's configuration: only convergence lines say "worse".)
  EXPECT_EQ(console.find("ring lr=0.5: worse"), std::string::npos) << console;
  EXPECT_EQ(console.find("ring lr=0.5: diverged"), std::string::npos) << console;

  const auto stats = read_csv(out / "stats.csv");
  ASSERT_EQ(stats.size(), 3U);
  EXPECT_EQ(stats[0].at("convergence"), "");  // the baseline itself
  EXPECT_EQ(stats[1].at("convergence"), "ok") << stats[1].at("final_loss_median");
  EXPECT_EQ(stats[2].at("convergence").rfind("worse loss", 0), 0U) << stats[2].at("convergence");
  EXPECT_GT(std::stod(stats[2].at("final_loss_median")),
            std::stod(stats[2].at("baseline_final_loss")) + std::stod(stats[2].at("loss_band")));
  for (const auto& row : read_csv(out / "summary.csv")) {
    // 30 epochs × 15 steps at 2 ranks: 450 steps in windows of 5.
    expect_bounded_increasing_curve(read_json_file((out / "points" / (row.at("id") + ".json")).string()), 3600);
  }
}

// The parts of the lost efficiency add up to it, in stats.csv, the console and a plot.
TEST(LossCurve, TheLostEfficiencyIsSplitIntoPartsThatAddUp) {
  const fs::path dir = scratch("efficiency_loss");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "lost",
    "settings": {"workload": "iris_mlp", "epochs": 4, "lr": 0.5, "batch_size": 4, "threads_per_rank": 1},
    "sweep": {"ranks": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  EXPECT_NE(joined(run.output).find("where the efficiency went"), std::string::npos) << joined(run.output);
  const auto stats = read_csv(out / "stats.csv");
  ASSERT_EQ(stats.size(), 2U);
  EXPECT_EQ(stats[0].at("efficiency_lost"), "");  // the baseline
  const auto& two = stats[1];
  double parts = 0;
  for (const char* part : {"lost_compute", "lost_communication", "lost_waiting", "lost_rest"}) {
    parts += std::stod(two.at(part));
  }
  EXPECT_NEAR(parts, std::stod(two.at("efficiency_lost")), 1e-4);
  EXPECT_NEAR(std::stod(two.at("efficiency_lost")), 1 - std::stod(two.at("efficiency_median")), 1e-4);
  // Those two hold by construction; each part is its own column: the compute part is the growth of
  // the compute time per step over the baseline's (one run each; the same samples per rank, so the
  // baseline's step counts once), a share of the 2-rank step.
  const auto summary = read_csv(out / "summary.csv");
  ASSERT_EQ(summary.size(), 2U);
  const double compute_growth =
      (std::stod(summary[1].at("compute_time_s")) - std::stod(summary[0].at("compute_time_s"))) /
      std::stod(summary[1].at("step_time_s"));
  EXPECT_NEAR(std::stod(two.at("lost_compute")), compute_growth, 1e-3) << two.at("lost_waiting");
  EXPECT_GT(fs::file_size(out / "plots" / "efficiency_loss.png"), 1000U);
}

// --timeline: each point leaves a Chrome trace with a process per rank, for training and for the
// comm benchmark; without it, none.
TEST(LossCurve, TimelineWritesATraceOfEveryRankPerPoint) {
  const fs::path dir = scratch("timeline");
  const fs::path train = write_experiment(dir, R"({
    "name": "traced", "settings": {"workload": "iris_mlp", "epochs": 2, "batch_size": 4, "ranks": 2}})");
  const fs::path out = dir / "out";
  HarnessRun run = run_harness({"run", train.string(), "--out", out.string(), "--timeline"}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  const Json trace = read_json_file((out / "logs" / (rows[0].at("id") + ".trace.json")).string());
  int processes = 0;
  int steps = 0;
  for (const auto& event : trace["traceEvents"]) {
    processes += event["name"] == "process_name" ? 1 : 0;
    steps += event["name"] == "step" ? 1 : 0;
  }
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(steps, 2 * 2 * 15);  // 2 ranks × 2 epochs × 15 steps: all of them, fewer than the bound
  EXPECT_EQ(trace["otherData"]["settings"]["timeline"], true);
  // A re-run whose job fails before it writes one (its mpirun, a fake first on PATH, exits at
  // once) leaves no earlier run's trace to be taken for its own, and no trace of its own behind.
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin" / "mpirun") << "#!/bin/sh\nexit 1\n";
  fs::permissions(dir / "bin" / "mpirun", fs::perms::owner_all);
  const HarnessRun failing =
      run_harness({"run", train.string(), "--out", out.string(), "--timeline", "--fresh"}, dir / "failing.log",
                  {{"PATH", (dir / "bin").string() + ":" + std::getenv("PATH")}});
  EXPECT_EQ(failing.outcome.exit_code, 1) << joined(failing.output);
  for (const auto& entry : fs::directory_iterator(out / "logs")) {
    EXPECT_FALSE(entry.path().string().ends_with(".trace.json")) << entry.path() << " outlived its run";
  }
  EXPECT_EQ(read_text(out / "report.html").find(".trace.json"), std::string::npos);

  const fs::path comm = dir / "comm";
  fs::create_directories(comm);
  const fs::path benchmark = write_experiment(comm, R"({
    "name": "traced_comm", "settings": {"kind": "comm", "ranks": 2, "comm_max_bytes": 1024, "timeline": true}})");
  run = run_harness({"run", benchmark.string(), "--out", (comm / "out").string()}, comm / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  int reductions = 0;
  for (const auto& entry : fs::directory_iterator(comm / "out" / "logs")) {
    if (entry.path().string().ends_with(".trace.json")) {
      const Json trace_of_point = read_json_file(entry.path().string());
      for (const auto& event : trace_of_point["traceEvents"]) {
        reductions += event["name"] == "reduce" ? 1 : 0;
      }
      EXPECT_NE(trace_of_point["otherData"]["traced_steps"].get<std::string>().find(
                    "timed reductions of each message size"),
                std::string::npos)
          << trace_of_point["otherData"];
    }
  }
  EXPECT_GT(reductions, 0);
  // The plot draws one size's reductions (the largest), not the same numbers of every size.
  EXPECT_NE(read_text(comm / "out" / "plots" / "timeline.svg").find("reductions of 1024 B, 1 to 3"), std::string::npos);
  // A workload whose loop is not traced says so before anything runs.
  fs::create_directories(dir / "kmeans");
  const fs::path kmeans = write_experiment(dir / "kmeans", R"({
    "name": "traced_kmeans", "settings": {"workload": "kmeans", "timeline": true}})");
  run = run_harness({"run", kmeans.string(), "--out", (dir / "kmeans" / "out").string()}, dir / "kmeans.log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  EXPECT_NE(joined(run.output).find("timeline: expected false for workload kmeans"), std::string::npos)
      << joined(run.output);
}

}  // namespace
}  // namespace harness::e2e
