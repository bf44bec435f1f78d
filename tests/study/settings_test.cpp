// The settings of a point: how they echo in errors, round-trip through JSON, split the batch,
// scale the learning rate and share the cores (harness/study/settings.h).
#include "harness/study/settings.h"

#include <gtest/gtest.h>

#include "harness/common/errors.h"
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

}  // namespace
}  // namespace harness
