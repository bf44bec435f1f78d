// End to end: studies run with the real `harness` binary on small experiment files.
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

#include <fmt/format.h>

#include "backends/registry.h"
#include "backends/device_staging.h"
#include "backends/gloo_allreduce.h"
#include "backends/gradient_sync.h"
#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/machine.h"
#include "harness/common/process.h"
#include "harness/launch/scheduler.h"  // available_cores
#include "harness/results/record.h"

namespace harness::e2e {
namespace {

TEST(EndToEnd, TinyScalingStudyWritesRecordsSummaryAndPlots) {
  const fs::path dir = scratch("tiny");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "tiny",
    "settings": {"workload": "iris_mlp", "backend": "allreduce", "epochs": 8, "lr": 0.5,
                 "batch_size": 4},
    "sweep": {"ranks": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);

  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("workload"), "iris_mlp");
    EXPECT_EQ(row.at("dataset_size"), "120");
    EXPECT_GT(std::stod(row.at("time_s")), 0.0);
    EXPECT_GT(std::stod(row.at("throughput_samples_per_s")), 0.0);
    EXPECT_GE(std::stod(row.at("comm_fraction")), 0.0);
    EXPECT_LE(std::stod(row.at("comm_fraction")), 1.0);
  }
  EXPECT_EQ(rows[0].at("ranks"), "1");
  EXPECT_EQ(rows[0].at("imbalance_time_s"), "0");  // one rank waits for nobody
  EXPECT_GE(std::stod(rows[1].at("imbalance_time_s")), 0.0);
  EXPECT_EQ(rows[0].at("speedup"), "1");
  EXPECT_EQ(rows[0].at("efficiency"), "1");
  EXPECT_EQ(rows[1].at("ranks"), "2");
  EXPECT_NEAR(std::stod(rows[1].at("efficiency")), std::stod(rows[1].at("speedup")) / 2, 1e-4);
  // One rank has nothing to exchange: its backend is never called, and the record says so.
  EXPECT_EQ(rows[0].at("exchange_path"), "none (one rank)");
  EXPECT_EQ(rows[1].at("exchange_path"), "host memory");
  EXPECT_EQ(rows[0].at("gpus"), "");  // a CPU point
  EXPECT_LT(std::stod(rows[0].at("comm_time_s")), std::stod(rows[0].at("compute_time_s")));
  EXPECT_NE(joined(run.output).find("one rank: nothing to exchange"), std::string::npos) << joined(run.output);

  for (const auto& row : rows) {
    const Json record = read_json_file((out / "points" / (row.at("id") + ".json")).string());
    EXPECT_EQ(record["schema_version"], kRecordSchemaVersion);
    EXPECT_EQ(record["status"], "ok");
    EXPECT_EQ(record["launch"]["scheduler"], "local");
    // Where the point's wall time went: the parts add up to it.
    const Json& timing = record["timing"];
    double parts = 0;
    for (const char* part : {"launch_s", "init_s", "data_s", "train_s", "eval_s", "finish_s"}) {
      ASSERT_TRUE(timing.contains(part)) << part;
      EXPECT_GE(timing[part].get<double>(), 0.0) << part;
      parts += timing[part].get<double>();
    }
    EXPECT_NEAR(parts, record["launch"]["wall_time_s"].get<double>(), 0.05);
    EXPECT_GT(timing["train_s"].get<double>(), 0.0);
    for (const char* key : {"git_commit", "host", "command_line", "started_at", "finished_at"}) {
      EXPECT_TRUE(record["provenance"].contains(key)) << key;
    }
    const Json& measurements = record["measurements"];
    EXPECT_NE(measurements["mpi_library"].get<std::string>().find("MPI"), std::string::npos);
    EXPECT_FALSE(measurements["torch_version"].get<std::string>().empty());
    EXPECT_EQ(measurements["exchange_path"], row.at("exchange_path"));
    EXPECT_FALSE(measurements.contains("gpus"));
    const Json& steps = measurements["steps"];
    EXPECT_EQ(steps["imbalance_s"].size(), steps["step_s"].size());
    ASSERT_EQ(steps["wait_s"].size(), steps["step_s"].size());
    for (std::size_t s = 0; s < steps["wait_s"].size(); ++s) {  // a part of the exposed time
      EXPECT_GE(steps["wait_s"][s].get<double>(), 0.0);
      EXPECT_LE(steps["wait_s"][s].get<double>(), steps["exposed_comm_s"][s].get<double>());
    }
    const Json& epochs = measurements["epochs"];
    ASSERT_EQ(epochs.size(), 8U);
    EXPECT_LT(epochs.back()["train_loss"].get<double>(), epochs.front()["train_loss"].get<double>())
        << "loss did not decrease for " << row.at("id");
    EXPECT_TRUE(fs::exists(out / "logs" / (row.at("id") + ".log")));
  }
  for (const char* plot : {"speedup", "efficiency", "throughput", "loss"}) {
    for (const char* extension : {".png", ".svg"}) {
      const fs::path image = out / "plots" / (std::string(plot) + extension);
      ASSERT_TRUE(fs::exists(image)) << image;
      EXPECT_GT(fs::file_size(image), 1000U) << image;
    }
  }
  EXPECT_TRUE(fs::exists(out / "experiment.json"));
}

TEST(EndToEnd, FashionMnistCnnTrainsOnTwoRanks) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "no dataset-fashion-mnist";
  const fs::path dir = scratch("cnn");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "cnn",
    "settings": {"workload": "mnist_cnn", "epochs": 2, "lr": 0.05, "batch_size": 32,
                 "dataset_size": 512, "test_size": 500, "ranks": 2, "bucket_mb": 1,
                 "overlap": true}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("dataset_size"), "512");
  EXPECT_GT(std::stod(rows[0].at("accuracy")), 0.3);  // ten classes: chance is 0.1
  const Json record = read_json_file((out / "points" / (rows[0].at("id") + ".json")).string());
  EXPECT_EQ(record["measurements"]["buckets"], 3);  // fc2 + fc1 bias, fc1 weight, the convs
  const Json& epochs = record["measurements"]["epochs"];
  EXPECT_LT(epochs[1]["train_loss"].get<double>(), epochs[0]["train_loss"].get<double>());
}

TEST(EndToEnd, CommBenchmarkOfEveryBackendSumsCorrectly) {
  const fs::path dir = scratch("comm");
  const bool gloo = gloo_available();  // a build without libgloo-dev has the other three
  const fs::path experiment = write_experiment(dir, std::string(R"({
    "name": "comm",
    "settings": {"kind": "comm", "ranks": 2, "comm_min_bytes": 4, "comm_max_bytes": 65536,
                 "comm_size_factor": 16, "comm_iterations": 3, "comm_warmup_iterations": 1},
    "sweep": {"backend": ["allreduce", "ring", "ps")") + (gloo ? R"(, "gloo"]}})" : "]}}"));
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), (gloo ? 4U : 3U) * 5U);  // backends × sizes 4, 64, 1024, 16384, 65536
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("ranks"), "2");
    EXPECT_EQ(row.at("wrong"), "0") << row.at("backend") << " " << row.at("bytes");
    EXPECT_GT(std::stod(row.at("time_us_median")), 0.0);
    EXPECT_LE(std::stod(row.at("time_us_min")), std::stod(row.at("time_us_median")));
    EXPECT_GE(std::stod(row.at("time_us_max")), std::stod(row.at("time_us_median")));
    // Two ranks: busbw = algbw · 2(p-1)/p = algbw.
    EXPECT_EQ(row.at("busbw_gbps"), row.at("algbw_gbps"));
  }
  EXPECT_EQ(rows[4].at("bytes"), "65536");
  for (const char* plot : {"bandwidth.png", "bandwidth.svg", "latency.png", "latency.svg"}) {
    EXPECT_GT(fs::file_size(out / "plots" / plot), 1000U) << plot;
  }
}

TEST(EndToEnd, FailedPointIsRecordedAndTheSweepGoesOn) {
  const fs::path dir = scratch("failing");
  // The first point cannot finish 50,000 epochs (1.5 M steps) in five seconds: it times out.
  const fs::path experiment = write_experiment(dir, R"({
    "name": "failing",
    "settings": {"timeout_s": 5},
    "sweep": {"epochs": [50000, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  EXPECT_TRUE(run.outcome.exited);
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);

  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].at("status"), "timeout");
  EXPECT_NE(rows[0].at("reason").find("timed out"), std::string::npos) << rows[0].at("reason");
  EXPECT_EQ(rows[1].at("status"), "ok");
  const Json record = read_json_file((out / "points" / (rows[0].at("id") + ".json")).string());
  EXPECT_EQ(record["status"], "timeout");
  EXPECT_TRUE(record["log_tail"].is_array());
}

// mpirun refusing to start the ranks (here: two ranks on one slot; tests/CMakeLists.txt gives these
// tests no OMPI_MCA_rmaps_base_oversubscribe) is a failed point whose reason quotes mpirun's own
// message, not only its exit code.
TEST(EndToEnd, AFailingMpirunGivesItsOwnMessageAsTheReason) {
  const fs::path dir = scratch("mpirun_refuses");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "mpirun_refuses",
    "settings": {"ranks": 2, "epochs": 1, "threads_per_rank": 1},
    "launcher": {"name": "local", "mpirun_args": ["--host", "localhost:1"]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("status"), "failed");
  EXPECT_NE(rows[0].at("reason").find("mpirun exit code 1: There are not enough slots available in the system "
                                      "to satisfy the 2 slots that were requested by the application:"),
            std::string::npos)
      << rows[0].at("reason");
}

// Ranks whose threads outnumber the cores are said to be so before the sweep, in the record, the
// summary, the efficiency split and the report.
TEST(EndToEnd, OversubscribedPointsAreSaidToBeSoEverywhere) {
  const int cores = available_cores();
  const fs::path dir = scratch("oversubscribed");
  const fs::path experiment = write_experiment(dir, fmt::format(R"({{
    "name": "oversubscribed",
    "settings": {{"epochs": 2, "lr": 0.5, "threads_per_rank": {}}},
    "sweep": {{"ranks": [1, 2]}}}})", cores));
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << explained(run);
  const std::string layout = describe_oversubscription({"", 2, cores, cores});  // "2 ranks × 2 threads on 2 cores"
  const std::string output = joined(run.output);
  EXPECT_NE(output.find("harness: warning: oversubscribed: 1 point(s) run more rank threads than this machine's"),
            std::string::npos) << output;
  EXPECT_NE(output.find("oversubscribed: " + layout + " (p001-"), std::string::npos) << output;
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].at("oversubscribed"), "");  // one rank with every core
  EXPECT_EQ(rows[1].at("oversubscribed"), layout);
  const Json record = read_json_file((out / "points" / (rows[1].at("id") + ".json")).string());
  EXPECT_EQ(record["measurements"]["oversubscribed"]["cores"], cores);
  EXPECT_EQ(record["measurements"]["oversubscribed"]["ranks"], 2);
  EXPECT_NE(read_text(out / "report.html").find(": " + layout), std::string::npos);
}

TEST(EndToEnd, RepeatedSweepGivesStatisticsPlotsAndAnEstimate) {
  const fs::path dir = scratch("repeats");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "repeats", "repeats": 2,
    "settings": {"epochs": 3, "lr": 0.5, "threads_per_rank": 1},
    "sweep": {"ranks": [1, 2], "zip": {"batch_size": [4, 8], "warmup_steps": [2, 1]}},
    "exclude": [{"ranks": 2, "batch_size": 8}]})");
  // No --out: the default results/<name>/<timestamp> under the working directory (dir).
  HarnessRun run = run_harness({"run", experiment.string()}, dir / "log1");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  std::vector<fs::path> outs;
  for (const auto& entry : fs::directory_iterator(dir / "results" / "repeats")) outs.push_back(entry.path());
  ASSERT_EQ(outs.size(), 1U);
  const fs::path out = outs.front();

  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 6U);  // 3 combinations × 2 repeats
  EXPECT_EQ(rows[0].at("repeat"), "0");
  EXPECT_EQ(rows[5].at("repeat"), "1");
  const auto stats = read_csv(out / "stats.csv");
  ASSERT_EQ(stats.size(), 3U);
  for (const auto& row : stats) {
    EXPECT_EQ(row.at("runs"), "2");
    EXPECT_EQ(row.at("ok_runs"), "2");
    const double low = std::stod(row.at("throughput_low"));
    const double median = std::stod(row.at("throughput_median"));
    const double high = std::stod(row.at("throughput_high"));
    EXPECT_LE(low, median);
    EXPECT_LE(median, high);
  }
  // Combinations in sweep order: (1, 4), (1, 8), (2, 4); (2, 8) is excluded.
  EXPECT_EQ(stats[2].at("ranks"), "2");
  EXPECT_FALSE(stats[2].at("karp_flatt").empty());
  EXPECT_EQ(stats[2].at("baseline_id"), stats[0].at("first_id"));

  // Rebuild everything from the records.
  std::map<std::string, std::uintmax_t> sizes;
  for (const auto& entry : fs::directory_iterator(out / "plots")) {
    if (entry.path().extension() == ".png") sizes[entry.path().filename().string()] = entry.file_size();
  }
  EXPECT_GE(sizes.size(), 9U);
  fs::remove_all(out / "plots");
  fs::remove(out / "summary.csv");
  fs::remove(out / "stats.csv");
  run = run_harness({"plot", out.string()}, dir / "log2");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 6U);
  EXPECT_EQ(read_csv(out / "stats.csv").size(), 3U);
  for (const auto& [name, size] : sizes) {
    EXPECT_TRUE(fs::exists(out / "plots" / name)) << name;
    EXPECT_GT(fs::file_size(out / "plots" / name), 1000U) << name;
  }
  EXPECT_EQ(run_harness({"plot", (dir / "nowhere").string()}, dir / "log3").outcome.exit_code, 2);

  run = run_harness({"plan", experiment.string()}, dir / "log4");
  ASSERT_TRUE(run.outcome.ok());
  EXPECT_NE(joined(run.output).find("estimated time: "), std::string::npos) << joined(run.output);
  EXPECT_NE(joined(run.output).find("(6 of 6 point(s) measured before under results/repeats/)"),
            std::string::npos)
      << joined(run.output);
}

// A run whose loss diverges still measured real timings: it is kept as a result, the console
// says it diverged, summary.csv leaves its loss empty, and the loss plot leaves the NaN epochs out instead
// of failing to draw.
TEST(EndToEnd, DivergedTrainingIsKeptAndSaid) {
  const fs::path dir = scratch("diverged");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "diverged",
    "settings": {"workload": "iris_mlp", "engine": "blas", "lr": 1e308, "epochs": 2},
    "sweep": {"seed": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_NE(joined(run.output).find("training diverged"), std::string::npos) << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("final_loss"), "");  // not a number: no value to compute with; the console says why
    EXPECT_GT(std::stod(row.at("throughput_samples_per_s")), 0.0);
  }
  // The loss by samples seen is drawn (a plot gnuplot failed on would only be warned about).
  EXPECT_EQ(joined(run.output).find("plot not drawn"), std::string::npos) << joined(run.output);
  EXPECT_TRUE(fs::exists(out / "plots" / "loss_samples.png"));
  for (const auto& entry : fs::directory_iterator(out / "plots")) {
    if (entry.path().extension() == ".png") {
      EXPECT_GT(entry.file_size(), 1000U) << entry.path();
    }
  }
}

// `plot` refuses to rebuild a summary without a record it cannot read, and says which; `run`
// refuses an --out directory that holds another experiment's results or unrelated files.

TEST(EndToEnd, AccuracyExperimentMeetsItsBars) {
  const fs::path dir = scratch("accuracy");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness(
      {"run", (fs::path(HARNESS_SOURCE_DIR) / "experiments" / "accuracy.json").string(), "--out",
       out.string()},
      dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 3U);
  for (const auto& row : rows) {
    const double bar = row.at("workload") == "iris_mlp" ? 0.90 : 0.85;
    EXPECT_GE(std::stod(row.at("accuracy")), bar) << row.at("workload") << "/" << row.at("engine");
  }
  EXPECT_EQ(rows[1].at("engine"), "blas");
  // Same initial weights, same samples: both engines end at the same loss.
  EXPECT_NEAR(std::stod(rows[0].at("final_loss")), std::stod(rows[1].at("final_loss")), 1e-4);
}

// experiments/workloads.json, crossed as CI can afford it: every workload (iris_mlp on both engines,
// mnist_cnn, resnet, kmeans, torchscript, gpt) runs end to end on 2 ranks, and every host-memory
// backend trains iris_mlp to the same final loss. (The whole cross, 42 points, took 84 s of CI
// with 30; each workload's equality under every backend is the MPI suite's
// DataParallelEquivalence and KMeans tests, in-process and exact.)
TEST(EndToEnd, EveryWorkloadRunsAndEveryBackendTrainsIrisToOneLoss) {
  const fs::path dir = scratch("workloads");
  const fs::path out = dir / "out";
  Json experiment = read_json_file((fs::path(HARNESS_SOURCE_DIR) / "experiments" / "workloads.json").string());
  experiment.erase("$schema");
  Json other_backends = Json::array();
  for (const std::string& backend : host_memory_backend_names()) {
    if (backend != "allreduce") other_backends.push_back(backend);
  }
  experiment["exclude"] = Json::array(
      {{{"workload", {"mnist_cnn", "resnet", "kmeans", "torchscript", "gpt"}}, {"backend", other_backends}},
       {{"engine", "blas"}, {"backend", other_backends}}});
  const HarnessRun run = run_harness({"run", write_experiment(dir, experiment.dump()).string(), "--out", out.string()},
                                     dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << explained(run);
  const auto rows = read_csv(out / "summary.csv");
  std::map<std::string, int> workloads;  // points per workload/engine
  std::string iris_loss;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok") << row.at("id");
    const std::string workload = row.at("workload") + "/" + row.at("engine");
    ++workloads[workload];
    if (workload != "iris_mlp/torch") continue;
    if (iris_loss.empty()) iris_loss = row.at("final_loss");
    EXPECT_NEAR(std::stod(row.at("final_loss")), std::stod(iris_loss), 1e-4) << "iris_mlp with " << row.at("backend");
  }
  EXPECT_EQ(workloads.size(), 7U);
  EXPECT_EQ(workloads["iris_mlp/torch"], static_cast<int>(host_memory_backend_names().size()));
  EXPECT_EQ(rows.size(), workloads.size() - 1 + host_memory_backend_names().size());
}

}  // namespace
}  // namespace harness::e2e
