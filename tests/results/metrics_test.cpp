#include "harness/results/metrics.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TrainMeasurements two_steps() {
  TrainMeasurements train;
  train.train_time_s = 2.0;
  train.samples_trained = 1000;
  train.steps.step_s = {0.010, 0.030};
  train.steps.compute_s = {0.008, 0.020};
  train.steps.comm_s = {0.002, 0.010};
  train.steps.exposed_comm_s = {0.001, 0.005};
  train.steps.wait_s = std::vector<double>{0.0, 0.002};
  train.steps.imbalance_s = std::vector<double>{0.0005, 0.0015};
  train.epochs = {{1, 0.5, 0.6, 0.7, 1.0, 0.1, 500}, {2, 0.25, 0.3, 0.9, 1.0, 0.1, 1000}};
  return train;
}

TEST(Metrics, PointMetricsFromMeasurements) {
  const PointMetrics metrics = point_metrics(two_steps());
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
  TrainMeasurements train = two_steps();
  train.steps.wait_s.reset();
  train.steps.imbalance_s.reset();
  EXPECT_FALSE(point_metrics(train).wait_time_s.has_value());
  EXPECT_FALSE(point_metrics(train).imbalance_time_s.has_value());
}

TEST(Metrics, NoStepsNoEpochsGiveZeros) {
  const PointMetrics metrics = point_metrics(TrainMeasurements{});
  EXPECT_EQ(metrics.step_time_s, 0);
  EXPECT_EQ(metrics.throughput_samples_per_s, 0);
  EXPECT_EQ(metrics.final_loss, 0);
}

}  // namespace
}  // namespace harness
