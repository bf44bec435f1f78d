#include "harness/results/stragglers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "harness/common/files.h"
#include "harness/results/result_set.h"
#include "harness/results/train_report.h"
#include "point_record_of.h"

namespace harness {
namespace {

// A run of `hosts.size()` training ranks whose step s names slowest[s] with lead leads[s] and an
// imbalance of half the lead; every rank's sampled compute is 10 ms, plus `extra_s` on rank
// `slow_rank`.
Measurements run_of(std::vector<std::string> hosts, const std::vector<int>& slowest, const std::vector<double>& leads,
                    int slow_rank = -1, double extra_s = 0) {
  Measurements m;
  m.world_size = static_cast<int>(hosts.size());
  m.hosts = std::move(hosts);
  TrainMeasurements train;
  train.training_ranks = m.world_size;
  train.steps.slowest_rank = slowest;
  train.steps.slowest_lead_s = leads;
  std::vector<double> imbalance;
  for (const double lead : leads) imbalance.push_back(lead / 2);
  train.steps.imbalance_s = imbalance;
  RankComputeSample sample;
  for (int64_t step = 0; step < 8; ++step) {
    sample.steps.push_back(step);
    std::vector<double>& row = sample.compute_s.emplace_back(static_cast<std::size_t>(m.world_size), 0.010);
    if (slow_rank >= 0) row[static_cast<std::size_t>(slow_rank)] += extra_s;
  }
  train.steps.rank_compute = sample;
  m.train = train;
  return m;
}

TEST(Stragglers, ShareLeadAndWaitOfEachRank) {
  // 10 steps of 4 ranks: rank 2 the slowest in 8 (leads 1..8 ms), rank 0 in 2 (0.5 ms each).
  std::vector<int> slowest = {2, 2, 0, 2, 2, 2, 0, 2, 2, 2};
  std::vector<double> leads;
  double lead_ms = 1;
  for (const int rank : slowest) leads.push_back(rank == 2 ? 1e-3 * lead_ms++ : 0.5e-3);
  const Measurements run = run_of({"a", "a", "b", "b"}, slowest, leads, 2, 0.005);
  const Stragglers s = find_stragglers({&run});
  ASSERT_TRUE(s.measured);
  EXPECT_EQ(s.steps, 10);
  ASSERT_EQ(s.ranks.size(), 4U);
  EXPECT_EQ(s.straggler.rank, 2);
  EXPECT_EQ(s.straggler.host, "b");
  EXPECT_EQ(s.straggler.slowest_steps, 8);
  EXPECT_DOUBLE_EQ(s.straggler.share, 0.8);
  EXPECT_NEAR(s.straggler.lead_median_s, 4.5e-3, 1e-12);     // median of 1..8 ms
  EXPECT_NEAR(s.straggler.lead_p95_s, 7.65e-3, 1e-12);       // interpolated between 7 and 8 ms
  EXPECT_NEAR(s.straggler.wait_per_step_s, 36e-3 / 2 / 10, 1e-12);  // its imbalances over all steps
  EXPECT_NEAR(s.ranks[0].share, 0.2, 1e-12);
  EXPECT_NEAR(s.ranks[0].wait_per_step_s, 2 * 0.25e-3 / 10, 1e-12);
  EXPECT_EQ(s.ranks[1].slowest_steps, 0);
  // The ranks' waits add up to the mean imbalance.
  double waits = 0;
  for (const Straggling& rank : s.ranks) waits += rank.wait_per_step_s;
  EXPECT_NEAR(waits, (36e-3 + 1e-3) / 2 / 10, 1e-12);
  // Hosts: "b" holds rank 2, "a" rank 0.
  ASSERT_EQ(s.hosts.size(), 2U);
  EXPECT_EQ(s.hosts[0].host, "a");
  EXPECT_EQ(s.hosts[0].ranks, 2);
  EXPECT_DOUBLE_EQ(s.hosts[1].share, 0.8);
  // The sampled compute: 10 ms everywhere but rank 2's 15 ms.
  EXPECT_NEAR(s.ranks[2].compute_median_s, 0.015, 1e-12);
  EXPECT_NEAR(s.ranks[1].compute_p95_s, 0.010, 1e-12);
  EXPECT_NEAR(s.median_compute_s, 0.010, 1e-12);
  // Its sampled compute is the slowest in each of the 2 blocks of 4 steps, by 5 ms (50% of the
  // others' 10 ms): flagged.
  EXPECT_EQ(s.flagged, "rank");
  ASSERT_NE(s.flagged_entry(), nullptr);
  EXPECT_EQ(s.flagged_entry()->rank, 2);
  EXPECT_EQ(s.straggler.blocks, 2);
  EXPECT_EQ(s.straggler.standing, 1);
  EXPECT_EQ(s.straggler.p_value, 0);
  EXPECT_NEAR(s.straggler.excess_s, 0.005, 1e-12);
  EXPECT_DOUBLE_EQ(s.rank_p_limit, kFalseAlarmRate / 2 / 4);
  EXPECT_EQ(describe_straggling(s.straggler),
            "rank 2 (b) was the slowest in 80% of the steps (chance: 25%), leading the others' median by 4.5 ms (p95 "
            "7.65 ms), a wait of 1.8 ms per step");
  EXPECT_EQ(describe_flag(s),
            "its compute 5 ms (50% of the median rank's) above the others' median in the median sampled step, "
            "consistently: p 0 over 2 blocks of steps (flagged at p <= 0.000125)");
}

// What the steps' slowest ranks say is what the table shows; the flag is decided by every rank's
// sampled compute (consistent_lead.h).
TEST(Stragglers, NoiseIsNotFlagged) {
  // Every rank in turn: each the slowest in a quarter of the steps.
  std::vector<int> slowest;
  for (int s = 0; s < 100; ++s) slowest.push_back(s % 4);
  const Measurements even = run_of({"a", "a", "a", "a"}, slowest, std::vector<double>(100, 2e-3));
  const Stragglers turns = find_stragglers({&even});
  EXPECT_EQ(turns.straggler.rank, 0);  // named all the same: the lowest of the tie
  EXPECT_EQ(turns.flagged, "");
  EXPECT_EQ(turns.flagged_entry(), nullptr);
  EXPECT_EQ(describe_flag(turns), "");
  // Always the same rank, and consistently so, but by a hair: 0.2 ms is 2% of its 10 ms compute,
  // below kMinExcessShare.
  const Measurements hair =
      run_of({"a", "a", "a", "a"}, std::vector<int>(100, 1), std::vector<double>(100, 0.2e-3), 1, 0.2e-3);
  const Stragglers by_a_hair = find_stragglers({&hair});
  EXPECT_DOUBLE_EQ(by_a_hair.straggler.share, 1.0);
  EXPECT_EQ(by_a_hair.ranks[1].p_value, 0);
  EXPECT_EQ(by_a_hair.flagged, "");
  // Two ranks, one slowest in 60% of the steps by 5 ms, their sampled compute alike.
  std::vector<int> two;
  for (int s = 0; s < 100; ++s) two.push_back(s % 5 < 3 ? 1 : 0);
  const Measurements pair = run_of({"a", "a"}, two, std::vector<double>(100, 5e-3));
  EXPECT_EQ(find_stragglers({&pair}).flagged, "");
  // The same rank always, by 5 ms: flagged, even with two ranks.
  Measurements slow = run_of({"a", "a"}, std::vector<int>(100, 1), std::vector<double>(100, 5e-3), 1, 5e-3);
  EXPECT_EQ(find_stragglers({&slow}).flagged, "rank");
  // Its wait, 2.5 ms per step, is 12.5% of a 20 ms step: flagged, and the flag says what it cost.
  slow.train->steps.step_s.assign(100, 0.020);
  const Stragglers costly = find_stragglers({&slow});
  EXPECT_EQ(costly.flagged, "rank");
  EXPECT_DOUBLE_EQ(costly.median_step_s, 0.020);
  EXPECT_NE(describe_flag(costly).find("above the others' median in the median sampled step, a wait of 13% of the "
                                       "median step, consistently"),
            std::string::npos)
      << describe_flag(costly);
  // The same on a 100 ms step (communication the rest) costs the others 2.5%: consistent, 50% more
  // compute, and not worth a flag (below kMinWaitShare).
  slow.train->steps.step_s.assign(100, 0.100);
  const Stragglers cheap = find_stragglers({&slow});
  EXPECT_EQ(cheap.ranks[1].p_value, 0);
  EXPECT_EQ(cheap.flagged, "");
}

// Every rank's sampled compute is 10 ms, but in step s `slow(s)` computes `extra_s` more (none
// for -1); the steps' slowest ranks and leads follow.
Measurements turns_of(std::vector<std::string> hosts, int steps, const std::function<int(int)>& slow, double extra_s) {
  std::vector<int> slowest;
  std::vector<double> leads;
  for (int s = 0; s < steps; ++s) {
    slowest.push_back(std::max(slow(s), 0));
    leads.push_back(slow(s) >= 0 ? extra_s : 0);
  }
  Measurements m = run_of(std::move(hosts), slowest, leads);
  RankComputeSample& sample = *m.train->steps.rank_compute;
  sample = {};
  for (int s = 0; s < steps; ++s) {
    sample.steps.push_back(s);
    std::vector<double>& row = sample.compute_s.emplace_back(static_cast<std::size_t>(m.world_size), 0.010);
    if (slow(s) >= 0) row[static_cast<std::size_t>(slow(s))] += extra_s;
  }
  return m;
}

TEST(Stragglers, AHostIsFlaggedWhenItsRanksTakeTurnsOrAreSlowTogether) {
  // Ranks 2 and 3 of host "b" take turns: each of them, and their host, is the slowest in every
  // block of steps. Two ranks of one host stand out, and so does the host: the host is flagged.
  const auto alternate = [](int s) { return 2 + s % 2; };
  const Measurements run = turns_of({"a", "a", "b", "b"}, 100, alternate, 3e-3);
  const Stragglers s = find_stragglers({&run});
  EXPECT_EQ(s.flagged, "host");
  ASSERT_NE(s.flagged_entry(), nullptr);
  EXPECT_EQ(s.flagged_entry()->host, "b");
  EXPECT_DOUBLE_EQ(s.host_p_limit, kFalseAlarmRate / 2 / 2);
  EXPECT_EQ(describe_straggling(*s.flagged_entry()),
            "host b (2 rank(s)) was the slowest in 100% of the steps (chance: 50%), leading the others' median by 3 ms "
            "(p95 3 ms), a wait of 1.5 ms per step");
  EXPECT_EQ(describe_flag(s),
            "its compute 1.5 ms (15% of the median rank's) above the others' median in the median sampled step, "
            "consistently: p 0 over 25 blocks of steps (flagged at p <= 0.00025)");
  // On one host, that host is always the slowest: never a flag of its own; rank 2 is.
  const Measurements one_host = turns_of({"a", "a", "a", "a"}, 100, alternate, 3e-3);
  EXPECT_EQ(find_stragglers({&one_host}).flagged, "rank");
  // One slow rank on a host of two is that rank, not its host.
  const Measurements one_rank = turns_of(
      {"a", "a", "b", "b"}, 100, [](int) { return 3; }, 3e-3);
  EXPECT_EQ(find_stragglers({&one_rank}).flagged, "rank");
  EXPECT_EQ(find_stragglers({&one_rank}).straggler.rank, 3);
}

// With a host flagged, the rank most often the slowest may be on another host: stats.csv's
// straggler columns describe the host, and the console's flag says HOST, not STRAGGLER.
TEST(Stragglers, AFlaggedHostIsNamedAsItselfInStatsAndOnTheConsole) {
  const auto path = std::filesystem::temp_directory_path() / "harness_straggler_host_test";
  std::filesystem::remove_all(path);
  const ResultsDirectory directory(path.string());
  directory.create();
  const Experiment experiment =
      parse_experiment(R"({"name": "exp", "settings": {"ranks": 8, "nodes": 2}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  // In each block of 4 steps rank 0 of host "a" is the slowest once, the four ranks of host "b"
  // in turns in the other three: rank 0 is the rank most often the slowest (25%, against 19% for
  // each of b's), but no rank is slow in a typical step; host "b" is, by 5 ms / 4 of its ranks'
  // mean compute in three steps of four.
  const auto slow = [](int s) { return s % 4 == 0 ? 0 : 4 + (s / 4 * 3 + s % 4 - 1) % 4; };
  PointRecord record = ok_record_of(points[0]);
  record.measurements = turns_of({"a", "a", "a", "a", "b", "b", "b", "b"}, 64, slow, 5e-3);
  record.measurements->kind = Kind::kTrain;
  StepSeries& steps = record.measurements->train->steps;
  for (auto* series : {&steps.step_s, &steps.compute_s, &steps.comm_s, &steps.exposed_comm_s}) {
    series->assign(64, 0.010);
  }
  steps.wait_s = std::vector<double>(64, 0.0);
  record.measurements->train->sgd = SgdFacts{100, 4, 32, 0.01, 1};
  write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  ASSERT_EQ(set.stragglers().at(0).flagged, "host");
  const std::string stats = TrainReport().tables(set).at("stats.csv");
  const std::string header = stats.substr(0, stats.find('\n'));
  const std::string row = stats.substr(stats.find('\n') + 1);
  const auto cell = [&](const std::string& column) {
    const auto index = std::count(header.begin(), header.begin() + header.find(column), ',');
    std::string rest = row;
    for (int i = 0; i < index; ++i) rest = rest.substr(rest.find(',') + 1);
    return rest.substr(0, rest.find_first_of(",\n"));
  };
  // The straggler columns describe what is flagged: the host, with no rank.
  EXPECT_EQ(cell("straggler_rank"), "") << stats;
  EXPECT_EQ(cell("straggler_host"), "b") << stats;
  EXPECT_EQ(cell("straggler_share"), "0.75") << stats;
  EXPECT_EQ(cell("straggler_chance"), "0.5") << stats;
  EXPECT_EQ(cell("straggler_excess_ms"), "1.25") << stats;
  EXPECT_EQ(cell("straggler_p"), "0") << stats;
  EXPECT_EQ(cell("straggler_flag"), "host") << stats;
  // The console's table names the rank most often the slowest, and flags the host.
  const std::string console = straggler_table(set);
  EXPECT_NE(console.find(" HOST\n"), std::string::npos) << console;
  EXPECT_EQ(console.find("STRAGGLER"), std::string::npos) << console;
  EXPECT_NE(console.find(": host b (4 rank(s)) was the slowest in 75% of the steps (chance: 50%)"), std::string::npos)
      << console;
}

TEST(Stragglers, RepeatsArePooledAndOlderRecordsLeftOut) {
  const Measurements first = run_of({"a", "a", "a"}, std::vector<int>(30, 1), std::vector<double>(30, 1e-3));
  const Measurements second = run_of({"a", "a", "a"}, std::vector<int>(10, 2), std::vector<double>(10, 1e-3));
  Measurements older = first;
  older.train->steps.slowest_rank.reset();
  older.train->steps.slowest_lead_s.reset();
  const Stragglers s = find_stragglers({&first, &second, &older});
  EXPECT_EQ(s.runs, 2);
  EXPECT_EQ(s.steps, 40);
  EXPECT_DOUBLE_EQ(s.straggler.share, 0.75);
  EXPECT_FALSE(find_stragglers({&older}).measured);
  // One training rank: nobody to be slower than.
  const Measurements alone = run_of({"a"}, std::vector<int>(5, 0), std::vector<double>(5, 0.0));
  EXPECT_FALSE(find_stragglers({&alone}).measured);
}

// Repeats on a cluster land on other nodes: rank 1 ran on n02, then on n07, where it was the
// slowest in every step. It is named with n07, and each host is weighed by the ranks it held.
TEST(Stragglers, ARanksHostIsWhereItWasSlowAndAHostLaterRunsUseIsCounted) {
  const Measurements first = run_of({"n01", "n02"}, std::vector<int>(10, 0), std::vector<double>(10, 1e-3));
  const Measurements second = run_of({"n01", "n07"}, std::vector<int>(30, 1), std::vector<double>(30, 5e-3), 1, 5e-3);
  const Stragglers s = find_stragglers({&first, &second});
  EXPECT_EQ(s.straggler.rank, 1);
  EXPECT_EQ(s.straggler.host, "n07");
  ASSERT_EQ(s.hosts.size(), 3U);
  for (const Straggling& host : s.hosts) {
    EXPECT_EQ(host.ranks, 1) << host.host;
    // n01 held a rank in both runs (40 of 80 rank-steps), n02 in the first (10), n07 in the second (30).
    EXPECT_DOUBLE_EQ(host.chance, host.host == "n01" ? 0.5 : host.host == "n02" ? 0.125 : 0.375) << host.host;
  }
}

}  // namespace
}  // namespace harness
