// Bringing your own model, end to end (docs/own-model.md): the shipped TorchScript export trains on
// 2 ranks through the backends, blocking and overlapped, and its records name the exact file; a
// model whose output is not the experiment's classes fails its point with the reason while the
// others complete; and the gpt workload reaches a target, timed, as the built-in workloads do.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e_helpers.h"
#include "harness/common/file_digest.h"
#include "harness/common/files.h"

namespace harness::e2e {
namespace {

TEST(OwnModel, TheShippedTorchScriptModelTrainsOnTwoRanksAndItsRecordsNameItsHash) {
  const fs::path dir = scratch("own_model");
  // The relative model_path is found in the harness's data folder (the test runs elsewhere).
  const fs::path experiment = write_experiment(dir, R"({
    "name": "own_model",
    "settings": {"workload": "torchscript", "model_path": "models/fashion_convnet.pt",
                 "ranks": 2, "threads_per_rank": 1, "batch_size": 16, "dataset_size": 256, "test_size": 64,
                 "epochs": 1, "lr": 0.05},
    "sweep": {"zip": {"backend": ["allreduce", "shm", "allreduce"], "overlap": [false, true, false],
                      "bucket_mb": [25, 0.05, 25], "model_data": ["mnist", "mnist", "synthetic"],
                      "input_shape": [[], [], [1, 28, 28]], "classes": [10, 10, 3]}}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  EXPECT_EQ(run.outcome.exit_code, 1) << explained(run);  // one point failed, the others ran
  const auto summary = read_csv(out / "summary.csv");
  ASSERT_EQ(summary.size(), 3U) << joined(run.output);
  const fs::path model = fs::path(HARNESS_SOURCE_DIR) / "data" / "models" / "fashion_convnet.pt";
  const std::string hash = sha256_of_file(model);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(summary[i].at("status"), "ok") << joined(run.output);
    const Json record = read_json_file((out / "points" / (summary[i].at("id") + ".json")).string());
    const Json& file = record["measurements"]["model_file"];
    EXPECT_EQ(file["sha256"], hash);
    EXPECT_EQ(file["bytes"], static_cast<int64_t>(fs::file_size(model)));
    EXPECT_EQ(fs::path(file["path"].get<std::string>()), model);
    EXPECT_EQ(record["measurements"]["parameters"], 46826);
    EXPECT_EQ(record["measurements"]["buckets"], i == 0 ? 1 : 4);  // 187 KB of gradients in 0.05 MiB buckets
  }
  // Both backends compute the same steps (dropout's masks come from the seed), the second with its
  // gradients reduced in buckets during the backward pass (hooks on the module's parameters).
  EXPECT_NEAR(std::stod(summary[0].at("final_loss")), std::stod(summary[1].at("final_loss")), 1e-4);
  EXPECT_EQ(summary[2].at("status"), "failed");
  const Json failed = read_json_file((out / "points" / (summary[2].at("id") + ".json")).string());
  EXPECT_NE(failed["reason"].get<std::string>().find(
                "fashion_convnet.pt: expected its forward to return one tensor [2, 3] (a batch of 2 samples of "
                "[1, 28, 28], classes 3), got [2, 10]"),
            std::string::npos)
      << failed["reason"];
}

TEST(OwnModel, GptTrainsOnTwoRanksToItsTargetAndTheBackendsAgree) {
  const fs::path dir = scratch("gpt");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "gpt",
    "settings": {"workload": "gpt", "ranks": 2, "threads_per_rank": 1, "batch_size": 8, "dataset_size": 768,
                 "test_size": 32, "epochs": 4, "lr": 1.0, "target": {"metric": "test_loss", "value": 3.0}},
    "sweep": {"backend": ["allreduce", "ring"]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << explained(run);
  const auto summary = read_csv(out / "summary.csv");
  ASSERT_EQ(summary.size(), 2U);
  for (const auto& row : summary) {
    const Json record = read_json_file((out / "points" / (row.at("id") + ".json")).string());
    const Json& epochs = record["measurements"]["epochs"];
    ASSERT_EQ(epochs.size(), 4U);
    // From ln 256 = 5.55 towards the pattern's noise (0.88).
    EXPECT_LT(epochs[3]["test_loss"].get<double>(), 3.0) << row.at("id");
    EXPECT_TRUE(record["measurements"]["time_to_target"]["reached"].get<bool>()) << row.at("id");
    EXPECT_GT(record["measurements"]["loss_curve"].size(), 10U);
  }
  EXPECT_NEAR(std::stod(summary[0].at("final_loss")), std::stod(summary[1].at("final_loss")), 1e-4);
}

}  // namespace
}  // namespace harness::e2e
