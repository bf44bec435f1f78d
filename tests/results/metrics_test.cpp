#include "harness/results/metrics.h"

#include <gtest/gtest.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

ScalingInput point(int ranks, double time_s, int batch_size = 4, bool ok = true) {
  ScalingInput input;
  input.settings.ranks = ranks;
  input.settings.batch_size = batch_size;
  input.ok = ok;
  input.time_s = time_s;
  input.samples_trained = 1200;
  return input;
}

TEST(Metrics, SpeedupAndEfficiencyAgainstTheFewestRanks) {
  const auto scaling = scaling_metrics({point(1, 8.0), point(2, 5.0), point(4, 4.0)});
  ASSERT_TRUE(scaling[0] && scaling[1] && scaling[2]);
  EXPECT_DOUBLE_EQ(scaling[0]->speedup, 1.0);
  EXPECT_DOUBLE_EQ(scaling[0]->efficiency, 1.0);
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.6);
  EXPECT_DOUBLE_EQ(scaling[1]->efficiency, 0.8);
  EXPECT_DOUBLE_EQ(scaling[2]->speedup, 2.0);
  EXPECT_DOUBLE_EQ(scaling[2]->efficiency, 0.5);
  EXPECT_EQ(scaling[2]->baseline, 0);
}

TEST(Metrics, BaselineOnlyAmongOtherwiseEqualSettings) {
  // Two curves (batch 4 and 16); each is measured against its own one-rank point.
  const auto scaling =
      scaling_metrics({point(1, 8.0, 4), point(1, 2.0, 16), point(2, 4.0, 4), point(2, 1.5, 16)});
  EXPECT_EQ(scaling[2]->baseline, 0);
  EXPECT_DOUBLE_EQ(scaling[2]->speedup, 2.0);
  EXPECT_EQ(scaling[3]->baseline, 1);
  EXPECT_NEAR(scaling[3]->speedup, 4.0 / 3.0, 1e-12);
}

TEST(Metrics, BaselineWithMoreThanOneRankScalesEfficiency) {
  const auto scaling = scaling_metrics({point(2, 6.0), point(4, 4.0)});
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.5);
  EXPECT_DOUBLE_EQ(scaling[1]->efficiency, 0.75);
}

TEST(Metrics, SpeedupComparesTimePerTrainedSample) {
  // Two ranks dropped a partial global batch each epoch: 1120 samples instead of 1200.
  ScalingInput fewer_samples = point(2, 4.0);
  fewer_samples.samples_trained = 1120;
  const auto scaling = scaling_metrics({point(1, 8.0), fewer_samples});
  EXPECT_NEAR(scaling[1]->speedup, (8.0 / 1200) / (4.0 / 1120), 1e-12);
}

TEST(Metrics, FailedPointsHaveNoScalingAndAreNoBaseline) {
  const auto scaling = scaling_metrics({point(1, 8.0, 4, false), point(2, 4.0), point(4, 3.0)});
  EXPECT_FALSE(scaling[0].has_value());
  EXPECT_EQ(scaling[2]->baseline, 1);
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.0);
  EXPECT_NEAR(scaling[2]->speedup, 4.0 / 3.0, 1e-12);
}

TEST(Metrics, RepeatsGiveMediansWithBootstrapIntervals) {
  // One rank: 8, 9, 10 s; two ranks: 4, 5, 6 s (same settings repeated).
  const auto stats = configuration_stats({point(1, 8.0), point(2, 4.0), point(1, 10.0),
                                          point(2, 6.0), point(1, 9.0), point(2, 5.0)});
  ASSERT_EQ(stats.size(), 2U);
  EXPECT_EQ(stats[0].runs, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(stats[1].ok_runs, 3);
  EXPECT_DOUBLE_EQ(stats[0].time_s.median, 9.0);
  EXPECT_DOUBLE_EQ(stats[1].time_s.median, 5.0);
  // The interval of a median of three lies within the observed range and contains the median.
  EXPECT_GE(stats[1].time_s.low, 4.0);
  EXPECT_LE(stats[1].time_s.high, 6.0);
  EXPECT_LE(stats[1].time_s.low, 5.0);
  EXPECT_GE(stats[1].time_s.high, 5.0);
  EXPECT_LT(stats[1].time_s.low, stats[1].time_s.high);
  // Speedup of medians, 9 / 5, with an interval inside the extreme ratios 8/6 .. 10/4.
  EXPECT_DOUBLE_EQ(stats[1].speedup.median, 1.8);
  EXPECT_GE(stats[1].speedup.low, 8.0 / 6.0);
  EXPECT_LE(stats[1].speedup.high, 10.0 / 4.0);
  EXPECT_DOUBLE_EQ(stats[0].speedup.median, 1.0);
  EXPECT_DOUBLE_EQ(stats[0].speedup.high, 1.0);
  EXPECT_DOUBLE_EQ(stats[1].efficiency.median, 0.9);
  // Karp-Flatt: e = (1/1.8 - 1/2) / (1 - 1/2).
  ASSERT_TRUE(stats[1].karp_flatt.has_value());
  EXPECT_NEAR(*stats[1].karp_flatt, (1 / 1.8 - 0.5) / 0.5, 1e-12);
  EXPECT_FALSE(stats[0].karp_flatt.has_value());
  // Deterministic: the same runs give the same interval.
  const auto again = configuration_stats({point(1, 8.0), point(2, 4.0), point(1, 10.0),
                                          point(2, 6.0), point(1, 9.0), point(2, 5.0)});
  EXPECT_EQ(again[1].speedup.low, stats[1].speedup.low);
}

TEST(Metrics, ExplicitBaselineComparesWithTheNamedValues) {
  // Speedup of every backend against allreduce at the same rank count.
  ScalingInput ring2 = point(2, 4.0);
  ring2.settings.backend = "ring";
  ScalingInput ring1 = point(1, 9.0);
  ring1.settings.backend = "ring";
  const auto stats = configuration_stats({point(1, 8.0), point(2, 5.0), ring1, ring2},
                                         Json{{"backend", "allreduce"}});
  EXPECT_EQ(stats[2].baseline, 0);
  EXPECT_NEAR(stats[2].speedup.median, 8.0 / 9.0, 1e-12);
  EXPECT_EQ(stats[3].baseline, 1);
  EXPECT_DOUBLE_EQ(stats[3].speedup.median, 1.25);
  EXPECT_DOUBLE_EQ(stats[3].efficiency.median, 1.25);  // same ranks as its baseline
  // A baseline on ranks and dataset_size (weak scaling grows the data with the ranks).
  ScalingInput big = point(2, 5.0);
  big.settings.dataset_size = 200;
  ScalingInput small = point(1, 5.0);
  small.settings.dataset_size = 100;
  const auto weak = configuration_stats({small, big}, Json{{"ranks", 1}, {"dataset_size", 100}});
  EXPECT_EQ(weak[1].baseline, 0);
}

TEST(Metrics, PointMetricsFromMeasurements) {
  const Json measurements = Json::parse(R"({
    "train_time_s": 2.0, "samples_trained": 1000,
    "steps": {"step_s": [0.010, 0.030], "compute_s": [0.008, 0.020], "comm_s": [0.002, 0.010],
              "exposed_comm_s": [0.001, 0.005], "wait_s": [0.0, 0.002],
              "imbalance_s": [0.0005, 0.0015]},
    "epochs": [{"epoch": 1, "train_loss": 0.5, "test_accuracy": 0.7},
               {"epoch": 2, "train_loss": 0.25, "test_accuracy": 0.9}]})");
  const PointMetrics metrics = point_metrics(measurements);
  EXPECT_DOUBLE_EQ(metrics.time_s, 2.0);
  EXPECT_DOUBLE_EQ(metrics.throughput_samples_per_s, 500.0);
  EXPECT_DOUBLE_EQ(metrics.step_time_s, 0.020);
  EXPECT_DOUBLE_EQ(metrics.compute_time_s, 0.014);
  EXPECT_DOUBLE_EQ(metrics.comm_time_s, 0.006);
  EXPECT_DOUBLE_EQ(metrics.exposed_comm_time_s, 0.003);
  EXPECT_DOUBLE_EQ(metrics.wait_time_s.value_or(-1), 0.001);
  EXPECT_DOUBLE_EQ(metrics.imbalance_time_s.value_or(-1), 0.001);
  EXPECT_NEAR(metrics.comm_fraction, 0.15, 1e-12);  // exposed / step
  EXPECT_NEAR(metrics.overlap, 0.5, 1e-12);         // 1 - exposed / comm
  EXPECT_DOUBLE_EQ(metrics.final_loss, 0.25);
  EXPECT_DOUBLE_EQ(metrics.accuracy, 0.9);
}

TEST(Metrics, RecordsWithoutImbalanceHaveNone) {
  const Json measurements = Json::parse(R"({
    "train_time_s": 1.0, "samples_trained": 10,
    "steps": {"step_s": [0.01], "compute_s": [0.01], "comm_s": [0], "exposed_comm_s": [0]},
    "epochs": []})");
  EXPECT_FALSE(point_metrics(measurements).wait_time_s.has_value());
  EXPECT_FALSE(point_metrics(measurements).imbalance_time_s.has_value());
}

TEST(Metrics, LoadImbalanceIsTheSlowestTrainingRanksComputeMinusTheMean) {
  // Two steps of three ranks, rank r's step s at r × 2 + s; rank 1 only serves.
  const std::vector<double> compute_s = {0.010, 0.020,   // rank 0
                                         0.000, 0.000,   // rank 1
                                         0.014, 0.020};  // rank 2
  const auto imbalance = load_imbalance_per_step(compute_s, 2, {true, false, true});
  ASSERT_EQ(imbalance.size(), 2U);
  EXPECT_NEAR(imbalance[0], 0.002, 1e-12);  // 0.014 - mean(0.010, 0.014)
  EXPECT_NEAR(imbalance[1], 0.0, 1e-12);
  // Counting the serving rank would make it 0.014 - 0.008.
  EXPECT_NEAR(load_imbalance_per_step(compute_s, 2, {true, true, true})[0], 0.006, 1e-12);
  // One training rank waits for nobody.
  EXPECT_EQ(load_imbalance_per_step({0.01, 0.02}, 2, {true}), std::vector<double>({0.0, 0.0}));
  EXPECT_THROW(load_imbalance_per_step({0.01, 0.02, 0.03}, 2, {true, true}), Error);
}

TEST(Metrics, MalformedMeasurementsThrow) {
  EXPECT_THROW(point_metrics(Json::parse(R"({"steps": {}})")), Error);
}

}  // namespace
}  // namespace harness
