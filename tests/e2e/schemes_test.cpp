// End to end: training schemes through `harness run` (docs/schemes.md). local_sgd at sync_every 1
// ends where sync ends; at 4 it trains apart between averagings; the records say which scheme and
// period each point ran with, and a point that leaves the scheme at sync keeps the id it had before
// schemes existed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "e2e_helpers.h"
#include "harness/common/files.h"

namespace harness::e2e {
namespace {

TEST(Schemes, LocalSgdRunsEndToEndAndAtSyncEveryOneEndsWhereSyncEnds) {
  const fs::path dir = scratch("schemes");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "schemes",
    "settings": {"workload": "iris_mlp", "epochs": 3, "lr": 0.5, "batch_size": 2, "ranks": 2,
                 "threads_per_rank": 1},
    "sweep": {"zip": {"scheme": ["sync", "local_sgd", "local_sgd"], "sync_every": [8, 1, 4]}}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << explained(run);
  const std::string console = joined(run.output);
  const auto summary = read_csv(out / "summary.csv");
  ASSERT_EQ(summary.size(), 3U) << console;
  std::vector<Json> records;
  for (const auto& row : summary) {
    EXPECT_EQ(row.at("status"), "ok") << console;
    records.push_back(read_json_file((out / "points" / (row.at("id") + ".json")).string()));
  }
  EXPECT_EQ(records[0]["settings"]["scheme"], "sync");
  EXPECT_EQ(records[1]["settings"]["scheme"], "local_sgd");
  EXPECT_EQ(records[1]["settings"]["sync_every"], 1);
  EXPECT_EQ(records[2]["settings"]["sync_every"], 4);

  // The sync point's id is the one the same point had before schemes existed (d9562b4): the scheme
  // and its period at their defaults are left out of the key.
  const fs::path before = dir / "before";
  const fs::path unswept = write_experiment(dir, R"({
    "name": "schemes",
    "settings": {"workload": "iris_mlp", "epochs": 3, "lr": 0.5, "batch_size": 2, "ranks": 2,
                 "threads_per_rank": 1}})");
  const HarnessRun plain = run_harness({"run", unswept.string(), "--dry-run", "--out", before.string()}, dir / "log2");
  ASSERT_TRUE(plain.outcome.ok()) << explained(plain);
  EXPECT_NE(joined(plain.output).find(summary[0].at("id")), std::string::npos) << joined(plain.output);

  // Per epoch, the training loss and the held-out accuracy: sync_every 1 is synchronous SGD (up to
  // float rounding); sync_every 4 is another model, which still learned.
  const Json& sync_epochs = records[0]["measurements"]["epochs"];
  const Json& every_one = records[1]["measurements"]["epochs"];
  const Json& every_four = records[2]["measurements"]["epochs"];
  ASSERT_EQ(sync_epochs.size(), 3U);
  ASSERT_EQ(every_one.size(), 3U);
  ASSERT_EQ(every_four.size(), 3U);
  for (std::size_t e = 0; e < 3; ++e) {
    EXPECT_NEAR(every_one[e]["train_loss"].get<double>(), sync_epochs[e]["train_loss"].get<double>(), 1e-5) << e;
    EXPECT_NEAR(every_one[e]["test_accuracy"].get<double>(), sync_epochs[e]["test_accuracy"].get<double>(), 1e-9) << e;
  }
  EXPECT_GT(std::abs(every_four[2]["train_loss"].get<double>() - sync_epochs[2]["train_loss"].get<double>()), 1e-6);
  // Every configuration took the same steps.
  EXPECT_EQ(records[2]["measurements"]["steps"]["step_s"].size(), records[0]["measurements"]["steps"]["step_s"].size());
}

}  // namespace
}  // namespace harness::e2e
