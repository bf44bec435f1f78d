#include "harness/results/convergence.h"

#include <gtest/gtest.h>

#include <cmath>

namespace harness {
namespace {

// Configuration 0 is the baseline of both; each configuration has its runs' metrics.
struct Study {
  std::vector<ConfigurationStats> configurations;
  std::vector<PointMetrics> metrics;

  void add(int baseline, const std::vector<std::pair<double, double>>& loss_and_accuracy) {
    ConfigurationStats configuration;
    configuration.baseline = baseline;
    for (const auto& [loss, accuracy] : loss_and_accuracy) {
      configuration.runs.push_back(static_cast<int>(metrics.size()));
      PointMetrics run;
      run.final_loss = loss;
      run.accuracy = accuracy;
      metrics.push_back(run);
    }
    configurations.push_back(configuration);
  }

  std::vector<ConvergenceCheck> check(const ConvergenceBands& bands = {}) const {
    std::vector<const PointMetrics*> pointers;
    for (const auto& run : metrics) pointers.push_back(&run);
    return check_convergence(configurations, pointers, bands);
  }
};

TEST(Convergence, TheBaselineIsNotJudgedAgainstItself) {
  Study study;
  study.add(0, {{0.5, 0.9}});
  const auto checks = study.check();
  EXPECT_FALSE(checks[0].judged);
  EXPECT_EQ(checks[0].verdict(), "");
}

TEST(Convergence, TheDefaultBandIsTheBaselinesSpreadOverItsRepeats) {
  Study study;
  study.add(0, {{0.40, 0.90}, {0.50, 0.80}, {0.45, 0.85}});  // losses span 0.1, accuracies 10 points
  study.add(0, {{0.53, 0.77}, {0.54, 0.78}});                // within the band on both
  study.add(0, {{0.60, 0.70}, {0.62, 0.72}});                // beyond it on both
  const auto checks = study.check();
  EXPECT_DOUBLE_EQ(checks[1].baseline_loss, 0.45);
  EXPECT_NEAR(checks[1].loss_band, 0.1, 1e-12);
  EXPECT_NEAR(checks[1].accuracy_band, 0.1, 1e-12);
  EXPECT_EQ(checks[1].verdict(), "ok");
  EXPECT_EQ(checks[2].verdict(), "worse loss and accuracy");
  EXPECT_TRUE(checks[2].worse());
}

// One repeat has no spread: the band is then 5% of the loss and one accuracy point.
TEST(Convergence, WithoutRepeatsTheBandHasAFloor) {
  Study study;
  study.add(0, {{1.0, 0.50}});
  study.add(0, {{1.04, 0.495}});
  study.add(0, {{1.06, 0.50}});
  study.add(0, {{1.0, 0.48}});
  const auto checks = study.check();
  EXPECT_DOUBLE_EQ(checks[1].loss_band, kMinLossBandFraction);
  EXPECT_DOUBLE_EQ(checks[1].accuracy_band, kMinAccuracyBand);
  EXPECT_EQ(checks[1].verdict(), "ok");
  EXPECT_EQ(checks[2].verdict(), "worse loss");
  EXPECT_EQ(checks[3].verdict(), "worse accuracy");
}

// On 30 held-out samples one more wrong answer moves the accuracy by 3.3 points: no evidence.
TEST(Convergence, OneHeldOutSampleIsTheLeastAccuracyBand) {
  Study study;
  study.add(0, {{1.0, 0.80}});
  study.add(0, {{1.0, 0.80 - 1.0 / 30}});
  study.add(0, {{1.0, 0.80 - 2.0 / 30}});
  for (auto& run : study.metrics) run.test_samples = 30;
  const auto checks = study.check();
  EXPECT_DOUBLE_EQ(checks[1].accuracy_band, 1.0 / 30);
  EXPECT_EQ(checks[1].verdict(), "ok");
  EXPECT_EQ(checks[2].verdict(), "worse accuracy");
}

TEST(Convergence, TheUsersBandsReplaceTheDefault) {
  Study study;
  study.add(0, {{1.0, 0.50}});
  study.add(0, {{1.3, 0.30}});
  EXPECT_EQ(study.check()[1].verdict(), "worse loss and accuracy");
  const auto checks = study.check({0.5, 0.25});
  EXPECT_DOUBLE_EQ(checks[1].loss_band, 0.5);
  EXPECT_EQ(checks[1].verdict(), "ok");
}

// A faster configuration whose loss became NaN is the worst case, not one to leave out.
TEST(Convergence, ADivergedRunIsFlagged) {
  Study study;
  study.add(0, {{1.0, 0.5}});
  study.add(0, {{NAN, 0.1}, {1.0, 0.5}});
  const auto checks = study.check();
  EXPECT_TRUE(checks[1].judged);
  EXPECT_EQ(checks[1].verdict(), "diverged");
}

TEST(Convergence, FailedRunsAreLeftOutAndABaselineWithoutOkRunsJudgesNothing) {
  Study study;
  study.add(0, {{1.0, 0.5}});
  study.add(0, {{1.0, 0.5}});
  std::vector<const PointMetrics*> pointers = {nullptr, &study.metrics[1]};
  const auto checks = check_convergence(study.configurations, pointers, {});
  EXPECT_FALSE(checks[1].judged);
}

}  // namespace
}  // namespace harness
