#include "harness/results/scaling.h"

#include <gtest/gtest.h>

#include <tuple>

#include "harness/study/sweep.h"

namespace harness {
namespace {

std::vector<std::optional<Scaling>> per_run(const std::vector<ScalingInput>& runs,
                                            const Json& baseline = Json::object()) {
  return analyse_scaling(runs, baseline).scaling;
}

std::vector<ConfigurationStats> configurations(const std::vector<ScalingInput>& runs,
                                               const Json& baseline = Json::object()) {
  return analyse_scaling(runs, baseline).configurations;
}

ScalingInput point(int ranks, double time_s, int batch_size = 4, bool ok = true) {
  ScalingInput input;
  input.settings.ranks = ranks;
  input.settings.batch_size = batch_size;
  input.ok = ok;
  input.time_s = time_s;
  input.samples_trained = 1200;
  return input;
}

TEST(Scaling, SpeedupAndEfficiencyAgainstTheFewestRanks) {
  const auto scaling = per_run({point(1, 8.0), point(2, 5.0), point(4, 4.0)});
  ASSERT_TRUE(scaling[0] && scaling[1] && scaling[2]);
  EXPECT_DOUBLE_EQ(scaling[0]->speedup, 1.0);
  EXPECT_DOUBLE_EQ(scaling[0]->efficiency, 1.0);
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.6);
  EXPECT_DOUBLE_EQ(scaling[1]->efficiency, 0.8);
  EXPECT_DOUBLE_EQ(scaling[2]->speedup, 2.0);
  EXPECT_DOUBLE_EQ(scaling[2]->efficiency, 0.5);
  EXPECT_EQ(scaling[2]->baseline, 0);
}

// async_ps's servers only serve: efficiency counts its workers (2 of 3 ranks here, 2 of 4 with two
// servers), while the parameter server backend's rank 0 still counts (it is part of each step).
TEST(Scaling, AsyncPsEfficiencyCountsItsWorkersOnly) {
  ScalingInput one = point(1, 8.0);
  one.settings.backend = "ps";
  ScalingInput three = point(3, 5.0);
  three.settings.backend = "ps";
  three.settings.scheme = "async_ps";
  EXPECT_EQ(scaling_ranks(three.settings), 2);
  EXPECT_EQ(scaling_ranks(one.settings), 1);
  apply_setting(three.settings, "ps_servers", 2, "test");
  EXPECT_EQ(scaling_ranks(three.settings), 1);
  apply_setting(three.settings, "ps_servers", 1, "test");
  ScalingInput synchronous = point(3, 5.0);
  synchronous.settings.backend = "ps";
  EXPECT_EQ(scaling_ranks(synchronous.settings), 3);
  // The async point against the one-rank point (a baseline named by its ranks).
  const auto scaling = per_run({one, three}, Json{{"ranks", 1}, {"scheme", "sync"}});
  ASSERT_TRUE(scaling[1].has_value());
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.6);
  EXPECT_DOUBLE_EQ(scaling[1]->efficiency, 0.8);  // 1.6 over 2 workers
}

TEST(Scaling, BaselineOnlyAmongOtherwiseEqualSettings) {
  // Two curves (batch 4 and 16); each is measured against its own one-rank point.
  const auto scaling =
      per_run({point(1, 8.0, 4), point(1, 2.0, 16), point(2, 4.0, 4), point(2, 1.5, 16)});
  EXPECT_EQ(scaling[2]->baseline, 0);
  EXPECT_DOUBLE_EQ(scaling[2]->speedup, 2.0);
  EXPECT_EQ(scaling[3]->baseline, 1);
  EXPECT_NEAR(scaling[3]->speedup, 4.0 / 3.0, 1e-12);
}

TEST(Scaling, BaselineWithMoreThanOneRankScalesEfficiency) {
  const auto scaling = per_run({point(2, 6.0), point(4, 4.0)});
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.5);
  EXPECT_DOUBLE_EQ(scaling[1]->efficiency, 0.75);
}

TEST(Scaling, SpeedupComparesTimePerTrainedSample) {
  // Two ranks dropped a partial global batch each epoch: 1120 samples instead of 1200.
  ScalingInput fewer_samples = point(2, 4.0);
  fewer_samples.samples_trained = 1120;
  const auto scaling = per_run({point(1, 8.0), fewer_samples});
  EXPECT_NEAR(scaling[1]->speedup, (8.0 / 1200) / (4.0 / 1120), 1e-12);
}

TEST(Scaling, FailedPointsHaveNoScalingAndAreNoBaseline) {
  const auto scaling = per_run({point(1, 8.0, 4, false), point(2, 4.0), point(4, 3.0)});
  EXPECT_FALSE(scaling[0].has_value());
  EXPECT_EQ(scaling[2]->baseline, 1);
  EXPECT_DOUBLE_EQ(scaling[1]->speedup, 1.0);
  EXPECT_NEAR(scaling[2]->speedup, 4.0 / 3.0, 1e-12);
}

TEST(Scaling, RepeatsGiveMediansWithBootstrapIntervals) {
  // One rank: 8, 9, 10 s; two ranks: 4, 5, 6 s (same settings repeated).
  const auto stats = configurations({point(1, 8.0), point(2, 4.0), point(1, 10.0),
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
  const auto again = configurations({point(1, 8.0), point(2, 4.0), point(1, 10.0),
                                          point(2, 6.0), point(1, 9.0), point(2, 5.0)});
  EXPECT_EQ(again[1].speedup.low, stats[1].speedup.low);
}

TEST(Scaling, ExplicitBaselineComparesWithTheNamedValues) {
  // Speedup of every backend against allreduce at the same rank count.
  ScalingInput ring2 = point(2, 4.0);
  ring2.settings.backend = "ring";
  ScalingInput ring1 = point(1, 9.0);
  ring1.settings.backend = "ring";
  const auto stats = configurations({point(1, 8.0), point(2, 5.0), ring1, ring2},
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
  const auto weak = configurations({small, big}, Json{{"ranks", 1}, {"dataset_size", 100}});
  EXPECT_EQ(weak[1].baseline, 0);
}

TEST(Scaling, RunsOfOneConfigurationShareIt) {
  const ScalingAnalysis analysis = analyse_scaling({point(1, 8.0), point(2, 4.0), point(1, 10.0)});
  EXPECT_EQ(analysis.configuration_of, (std::vector<int>{0, 1, 0}));
  // Each run's own speedup is against its baseline configuration's median (9 s).
  EXPECT_DOUBLE_EQ(analysis.scaling[1]->speedup, 9.0 / 4.0);
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

// A weak-scaling sweep zips dataset_size with ranks: without a baseline block, each point's
// baseline is the point of the same zip with the fewest ranks, not itself.
TEST(Scaling, SettingsZippedWithRanksMoveWithItAndTheFewestRanksIsTheBaseline) {
  const Experiment experiment = parse_experiment(R"({"name": "weak", "sweep": {
      "lr": [0.1, 0.2],
      "zip": {"ranks": [1, 2, 4], "dataset_size": [1024, 2048, 4096]}}})", "weak.json");
  EXPECT_EQ(settings_zipped_with_ranks(experiment.sweep), std::vector<std::string>{"dataset_size"});
  // Per rank the work is fixed: 4 ranks take 1.25 times as long as one rank for 4 times the samples.
  std::vector<ScalingInput> runs;
  for (const double lr : {0.1, 0.2}) {
    for (const auto& [ranks, size, time_s] : {std::tuple{1, 1024, 8.0}, {2, 2048, 9.0}, {4, 4096, 10.0}}) {
      ScalingInput input = point(ranks, time_s);
      input.settings.lr = lr;
      input.settings.dataset_size = size;
      input.samples_trained = size;
      runs.push_back(input);
    }
  }
  const ScalingAnalysis analysis =
      analyse_scaling(runs, Json::object(), settings_zipped_with_ranks(experiment.sweep));
  ASSERT_TRUE(analysis.scaling[2]);
  EXPECT_EQ(analysis.configurations[analysis.scaling[2]->baseline].settings.ranks, 1);
  EXPECT_EQ(analysis.configurations[analysis.scaling[2]->baseline].settings.lr, 0.1);  // not across lr
  EXPECT_DOUBLE_EQ(analysis.scaling[2]->efficiency, 0.8);  // (8/1024) / (10/4096) / 4
  EXPECT_EQ(analysis.configurations[analysis.scaling[5]->baseline].settings.lr, 0.2);
  // Without knowing what moves with ranks, each point was its own baseline.
  EXPECT_DOUBLE_EQ(analyse_scaling(runs).scaling[2]->efficiency, 1.0);
  // Naming that baseline, {"ranks": 1} as the docs do, moves the zipped keys as the default does
  // (the 2- and 4-rank points once had no baseline: their speedup was empty).
  const ScalingAnalysis named = analyse_scaling(runs, Json{{"ranks", 1}}, settings_zipped_with_ranks(experiment.sweep));
  for (const std::size_t run : {1U, 2U, 4U, 5U}) {
    ASSERT_TRUE(named.scaling[run]) << run;
    EXPECT_EQ(named.scaling[run]->baseline, analysis.scaling[run]->baseline) << run;
  }
  EXPECT_DOUBLE_EQ(named.scaling[2]->efficiency, 0.8);
  EXPECT_EQ(named.configurations[1].baseline, 0);
  EXPECT_DOUBLE_EQ(named.configurations[1].speedup.median, (8.0 / 1024) / (9.0 / 2048));
}

TEST(Scaling, ASweepWhosePointsWouldAllBeTheirOwnBaselineSaysSoBeforeItRuns) {
  const auto settings_of = [](const Experiment& experiment) {
    std::vector<PointSettings> points;
    for (const Point& point : expand(experiment)) points.push_back(point.settings);
    return points;
  };
  // A weak-scaling zip: its points compare with the one-rank point.
  const Experiment weak = parse_experiment(
      R"({"name": "w", "sweep": {"zip": {"ranks": [1, 2], "dataset_size": [64, 128]}}})", "w.json");
  EXPECT_EQ(baseline_warning(weak, settings_of(weak)), "");
  const Experiment weak_named = parse_experiment(
      R"({"name": "w", "baseline": {"ranks": 1}, "sweep": {"zip": {"ranks": [1, 2], "dataset_size": [64, 128]}}})",
      "w.json");
  EXPECT_EQ(baseline_warning(weak_named, settings_of(weak_named)), "");
  // The same pairs made by excluding the others from a product: dataset_size is not zipped with
  // ranks, so every point differs from the others in more than ranks.
  const Experiment own = parse_experiment(
      R"({"name": "o", "sweep": {"ranks": [1, 2], "dataset_size": [64, 128]},
          "exclude": [{"ranks": 1, "dataset_size": 128}, {"ranks": 2, "dataset_size": 64}]})", "o.json");
  ASSERT_EQ(settings_of(own).size(), 2U);
  const std::string warning = baseline_warning(own, settings_of(own));
  EXPECT_NE(warning.find("every point is its own baseline"), std::string::npos) << warning;
  // A baseline block, one rank count, or a single point: nothing to say.
  const Experiment named = parse_experiment(
      R"({"name": "n", "baseline": {"ranks": 1, "dataset_size": 64}, "sweep": {"ranks": [1, 2], "dataset_size": [64, 128]},
          "exclude": [{"ranks": 1, "dataset_size": 128}, {"ranks": 2, "dataset_size": 64}]})", "n.json");
  EXPECT_EQ(baseline_warning(named, settings_of(named)), "");
  // A baseline block whose point an exclude rule took for one configuration: said, with which.
  const Experiment orphaned = parse_experiment(
      R"({"name": "m", "baseline": {"ranks": 1}, "sweep": {"ranks": [1, 2], "batch_size": [4, 8]},
          "exclude": [{"ranks": 1, "batch_size": 8}]})", "m.json");
  EXPECT_EQ(baseline_warning(orphaned, settings_of(orphaned)),
            "baseline {\"ranks\":1}: 1 of 3 configuration(s) have no point with these values and otherwise their "
            "settings (first: ranks=2 batch_size=8), so their speedup and efficiency will be empty");
  const Experiment fixed = parse_experiment(R"({"name": "f", "sweep": {"lr": [0.1, 0.2]}})", "f.json");
  EXPECT_EQ(baseline_warning(fixed, settings_of(fixed)), "");
}

}  // namespace
}  // namespace harness
