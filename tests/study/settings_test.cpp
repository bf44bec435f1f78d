// The settings of a point: how they echo in errors, round-trip through JSON, split the batch,
// scale the learning rate and share the cores (harness/study/settings.h).
#include "harness/study/settings.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "harness/common/errors.h"
#include "harness/study/sweep.h"
#include "parse_error.h"

namespace harness {
namespace {

TEST(Settings, EchoedValuesAreQuotedEscapedAndCutBetweenWholeCharacters) {
  EXPECT_EQ(describe_text("a\nb"), R"("a\nb")");
  EXPECT_EQ(describe_text(std::string(1000000, 'w')), "\"" + std::string(56, 'w') + "...");
  EXPECT_EQ(shortened("\xC3\xA9\xC3\xA9\xC3\xA9", 5), "\xC3\xA9...");  // "éé" cut after one é
  EXPECT_EQ(shortened(R"(\u0001abc)", 8), "...");  // not half an escape
  EXPECT_EQ(shortened("short", 5), "short");
}

TEST(Settings, RoundTripThroughJson) {
  PointSettings settings;
  settings.ranks = 3;
  settings.lr = 0.25;
  settings.data_path = "/tmp/x.csv";
  const PointSettings back = settings_from_json(to_json(settings), "t");
  EXPECT_EQ(to_json(back), to_json(settings));
}

TEST(Settings, WeakScalingFixesThePerRankBatchStrongScalingTheGlobalBatch) {
  PointSettings settings;
  settings.batch_size = 32;
  EXPECT_EQ(per_rank_batch(settings, 4), 32);
  EXPECT_EQ(global_batch(settings, 4), 128);
  settings.scaling = "strong";
  EXPECT_EQ(per_rank_batch(settings, 4), 8);
  EXPECT_EQ(global_batch(settings, 4), 32);
}

TEST(Settings, LinearLearningRateScalingWithWarmup) {
  PointSettings settings;
  settings.lr = 0.1;
  settings.batch_size = 32;
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 0.0), 0.1);  // lr_scaling none
  settings.lr_scaling = "linear";
  EXPECT_DOUBLE_EQ(learning_rate(settings, 1, 0.0), 0.1);  // one rank: the reference batch
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 0.0), 0.8);  // 8 × 32 / 32
  settings.lr_reference_batch = 256;
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 3.0), 0.1);  // Goyal et al.: 0.1 × 256 / 256
  settings.lr_reference_batch = 0;
  settings.warmup_epochs = 2;
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 0.0), 0.1);   // the ramp starts at lr
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 1.0), 0.45);  // halfway
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 2.0), 0.8);   // and ends at the scaled rate
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 5.0), 0.8);
  // Strong scaling: the global batch stays 32 at every rank count, and so does the rate.
  settings.scaling = "strong";
  EXPECT_DOUBLE_EQ(learning_rate(settings, 8, 5.0), 0.1);
}

TEST(Settings, AutoThreadsShareTheCoresBetweenRanks) {
  PointSettings settings;
  settings.ranks = 1;
  EXPECT_EQ(resolved_threads_per_rank(settings, 2), 2);
  settings.ranks = 2;
  EXPECT_EQ(resolved_threads_per_rank(settings, 2), 1);
  settings.ranks = 4;
  EXPECT_EQ(resolved_threads_per_rank(settings, 2), 1);
  settings.threads_per_rank = 3;
  EXPECT_EQ(resolved_threads_per_rank(settings, 2), 3);
}

// What a point does not read: other workloads', backends' and kinds' settings, and a delay's rank
// without a delay. A fixed one changes nothing, and `run` says so; a setting a backend of the
// sweep reads (ps_server_trains with ps among the backends) is read.
TEST(Settings, WhatNoPointReadsIsNamedBeforeTheRun) {
  PointSettings iris;
  iris.workload = "iris_mlp";
  iris.backend = "shm";
  const std::vector<std::string> unread = settings_not_read(iris);
  for (const char* key : {"resnet_depth", "kmeans_k", "comm_iterations", "ps_server_trains", "inject_compute_delay_rank",
                          "test_size"}) {
    EXPECT_NE(std::find(unread.begin(), unread.end(), key), unread.end()) << key;
  }
  for (const char* key : {"shm_reduce_threads", "lr", "ranks"}) {
    EXPECT_EQ(std::find(unread.begin(), unread.end(), key), unread.end()) << key;
  }
  // GPU staging's settings, read where buffers on a GPU are staged through host memory only.
  for (const char* key : {"staging_chunk_bytes", "shm_copy_engine_gathers"}) {
    EXPECT_NE(std::find(unread.begin(), unread.end(), key), unread.end()) << key << " on device cpu";
  }
  PointSettings staged = iris;
  staged.device = "cuda";
  const std::vector<std::string> staged_unread = settings_not_read(staged);
  for (const char* key : {"staging_chunk_bytes", "shm_copy_engine_gathers"}) {
    EXPECT_EQ(std::find(staged_unread.begin(), staged_unread.end(), key), staged_unread.end()) << key << " on device cuda";
  }
  staged.backend = "hier";
  const std::vector<std::string> hier_unread = settings_not_read(staged);
  EXPECT_NE(std::find(hier_unread.begin(), hier_unread.end(), "shm_copy_engine_gathers"), hier_unread.end());
  // hier's crossover decides between its ring and MPI across nodes only (on one node it is shm);
  // ps's rank 0 has no training to skip in the comm benchmark.
  const auto unread_by = [](const PointSettings& settings, const char* key) {
    const std::vector<std::string> unread = settings_not_read(settings);
    return std::find(unread.begin(), unread.end(), key) != unread.end();
  };
  PointSettings hier = iris;
  hier.backend = "hier";
  hier.ranks = 4;
  EXPECT_TRUE(unread_by(hier, "hier_allreduce_below_bytes")) << "on one node";
  hier.nodes = 2;
  EXPECT_FALSE(unread_by(hier, "hier_allreduce_below_bytes")) << "on two nodes";
  PointSettings ps = iris;
  ps.backend = "ps";
  EXPECT_FALSE(unread_by(ps, "ps_server_trains")) << "training";
  ps.kind = Kind::kComm;
  EXPECT_TRUE(unread_by(ps, "ps_server_trains")) << "comm benchmark";
  // The comm benchmark computes nothing to delay.
  ps.inject_compute_delay_ms = 10;
  EXPECT_TRUE(unread_by(ps, "inject_compute_delay_ms"));
  EXPECT_TRUE(unread_by(ps, "inject_compute_delay_rank"));
  PointSettings cnn;
  cnn.workload = "mnist_cnn";
  const std::vector<std::string> cnn_unread = settings_not_read(cnn);
  EXPECT_EQ(std::find(cnn_unread.begin(), cnn_unread.end(), "test_size"), cnn_unread.end());
  const Experiment fixed = parse_experiment(R"({"name": "x", "settings": {"ranks": 2, "resnet_depth": 50,
      "comm_iterations": 5, "ps_server_trains": true}, "sweep": {"backend": ["allreduce", "ps"]}})",
                                            "exp.json");
  EXPECT_EQ(unread_settings_warning(fixed, expand(fixed)),
            "exp.json: settings resnet_depth, comm_iterations: no point reads them (owned by another workload, "
            "backend, scheme or kind, or unused where they are: a delay's rank without a delay, GPU staging's on the CPU, "
            "hier's crossover on one node, ps_server_trains or a compute delay in a comm benchmark), so they change "
            "nothing");
  // A scheme's settings are read by its points alone: sync_every by local_sgd's.
  PointSettings synchronous;
  const std::vector<std::string> sync_unread = settings_not_read(synchronous);
  EXPECT_NE(std::find(sync_unread.begin(), sync_unread.end(), "sync_every"), sync_unread.end());
  PointSettings local;
  local.scheme = "local_sgd";
  const std::vector<std::string> local_unread = settings_not_read(local);
  EXPECT_EQ(std::find(local_unread.begin(), local_unread.end(), "sync_every"), local_unread.end());
  const Experiment read = parse_experiment(R"({"name": "x", "settings": {"ranks": 2, "ps_server_trains": true},
      "sweep": {"backend": ["allreduce", "ps"]}})",
                                           "exp.json");
  EXPECT_EQ(unread_settings_warning(read, expand(read)), "");
}

}  // namespace
}  // namespace harness
