#include "harness/results/efficiency_loss.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

PointMetrics step(double step_s, double compute_s, double exposed_s, double wait_s, double samples_per_step) {
  PointMetrics m;
  m.step_time_s = step_s;
  m.compute_time_s = compute_s;
  m.exposed_comm_time_s = exposed_s;
  m.wait_time_s = wait_s;
  m.samples_per_step = samples_per_step;
  return m;
}

ConfigurationStats configuration(int ranks, int baseline, double efficiency, std::vector<int> runs) {
  ConfigurationStats stats;
  stats.settings.ranks = ranks;
  stats.baseline = baseline;
  stats.efficiency.median = efficiency;
  stats.runs = std::move(runs);
  stats.ok_runs = static_cast<int>(stats.runs.size());
  return stats;
}

// The example: one rank computes a batch of 64 in 84 ms; on two ranks (64 each) the
// compute grows to 106 ms, 10 ms go to the exchange and 2 to waiting for the other rank.
TEST(EfficiencyLoss, WeakScalingSplitsTheLostEfficiencyIntoItsParts) {
  const std::vector<PointMetrics> runs = {step(0.085, 0.084, 0.0, 0.0, 64), step(0.119, 0.106, 0.012, 0.002, 128)};
  const double efficiency = 0.085 / 0.119;  // as if wall time were steps alone
  const std::vector<ConfigurationStats> configurations = {configuration(1, 0, 1, {0}),
                                                          configuration(2, 0, efficiency, {1})};
  const auto losses = efficiency_losses(configurations, {&runs[0], &runs[1]});
  EXPECT_FALSE(losses[0].judged);  // the baseline
  ASSERT_TRUE(losses[1].judged);
  const EfficiencyLoss& loss = losses[1];
  EXPECT_NEAR(loss.lost, 1 - efficiency, 1e-12);
  EXPECT_NEAR(loss.compute, (0.106 - 0.084) / 0.119, 1e-12);
  EXPECT_NEAR(loss.communication, 0.010 / 0.119, 1e-12);
  EXPECT_NEAR(loss.waiting, 0.002 / 0.119, 1e-12);
  // The baseline's 1 ms of "other" is the ideal's too; this one's 1 ms is the rest.
  EXPECT_NEAR(loss.rest, (0.001 - 0.001) / 0.119, 1e-12);
  EXPECT_NEAR(loss.compute + loss.communication + loss.waiting + loss.rest, loss.lost, 1e-12);
}

// Strong scaling: the global batch stays 64, so the ideal step of 2 ranks is half the baseline's
// (r = 1/2), and the baseline's own communication counts at that share.
TEST(EfficiencyLoss, StrongScalingComparesWithHalfTheBaselineStep) {
  const std::vector<PointMetrics> runs = {step(0.100, 0.090, 0.008, 0.0, 64), step(0.060, 0.050, 0.008, 0.001, 64)};
  const std::vector<ConfigurationStats> configurations = {configuration(2, 0, 1, {0}),
                                                          configuration(4, 0, 0.8, {1})};
  const auto losses = efficiency_losses(configurations, {&runs[0], &runs[1]});
  ASSERT_TRUE(losses[1].judged);
  EXPECT_NEAR(losses[1].compute, (0.050 - 0.045) / 0.060, 1e-12);
  EXPECT_NEAR(losses[1].communication, (0.007 - 0.004) / 0.060, 1e-12);
  EXPECT_NEAR(losses[1].waiting, 0.001 / 0.060, 1e-12);
  EXPECT_NEAR(losses[1].lost, 0.2, 1e-12);
}

TEST(EfficiencyLoss, ConfigurationsWithoutMeasuredStepsAreNotJudged) {
  const std::vector<PointMetrics> runs = {step(0.1, 0.1, 0, 0, 0), step(0.1, 0.1, 0, 0, 8)};  // no global batch
  const std::vector<ConfigurationStats> configurations = {configuration(1, 0, 1, {0}),
                                                          configuration(2, 0, 0.5, {1})};
  EXPECT_FALSE(efficiency_losses(configurations, {&runs[0], &runs[1]})[1].judged);
  EXPECT_FALSE(efficiency_losses(configurations, {&runs[1], nullptr})[1].judged);
}

}  // namespace
}  // namespace harness
