#include "harness/rank/step_records.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "harness/common/errors.h"

namespace harness {
namespace {

TEST(StepRecords, LoadImbalanceIsTheSlowestTrainingRanksComputeMinusTheMean) {
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

TEST(StepRecords, AServingRankNeverCountsInTheStep) {
  // Two steps; rank 0 serves (ps): it computes nothing and its step, longest, is the worker's
  // compute spent waiting. Rank 1 trains: 2.5 ms compute, 0.1 ms exposed.
  StepTimes all;
  all.step_s = {0.0030, 0.0030, /* rank 1 */ 0.0026, 0.0026};
  all.compute_s = {0.0, 0.0, /* rank 1 */ 0.0025, 0.0025};
  all.comm_s = {0.0030, 0.0030, /* rank 1 */ 0.0001, 0.0001};
  all.exposed_s = {0.0030, 0.0030, /* rank 1 */ 0.0001, 0.0001};
  const StepSeries series = mean_training_rank_steps(all, 2, {false, true});
  EXPECT_EQ(series.compute_s, std::vector<double>({0.0025, 0.0025}));
  EXPECT_EQ(series.exposed_comm_s, std::vector<double>({0.0001, 0.0001}));
  EXPECT_EQ(series.step_s, std::vector<double>({0.0026, 0.0026}));
  EXPECT_EQ(*series.wait_s, std::vector<double>({0.0, 0.0}));
  EXPECT_THROW(mean_training_rank_steps(all, 3, {false, true}), Error);
}

// A straggler computes while the others wait: every rank's step is about as long, so which one
// took longest is chance, and one rank's times would put the delay in compute or in waiting by
// that chance. The means over the training ranks split it the same way every time.
TEST(StepRecords, TheStepIsTheMeanOfTheTrainingRanksWhoeverTookLongest) {
  // One step of four ranks: rank 2 computes 10 ms longer; the others wait for it in their exposed
  // time. Rank 0's step is the longest by jitter.
  StepTimes all;
  all.compute_s = {0.005, 0.005, 0.015, 0.005};
  all.exposed_s = {0.0111, 0.011, 0.001, 0.011};
  all.comm_s = {0.0111, 0.011, 0.001, 0.011};
  all.step_s = {0.0161, 0.016, 0.016, 0.016};
  const StepSeries series = mean_training_rank_steps(all, 1, {true, true, true, true});
  ASSERT_EQ(series.step_s.size(), 1U);
  EXPECT_NEAR(series.step_s[0], 0.016025, 1e-12);
  EXPECT_NEAR(series.compute_s[0], 0.0075, 1e-12);        // (3 × 5 + 15) / 4
  EXPECT_NEAR(series.exposed_comm_s[0], 0.008525, 1e-12);
  EXPECT_NEAR((*series.wait_s)[0], 0.0075, 1e-12);        // three ranks wait 10 ms, one none
  // The wait is the load imbalance: the slowest compute less the mean.
  EXPECT_NEAR(load_imbalance_per_step(all.compute_s, 1, {true, true, true, true})[0], 0.0075, 1e-12);
  // A rank waits no longer than its exposed time.
  all.exposed_s = {0.002, 0.011, 0.001, 0.011};
  EXPECT_NEAR((*mean_training_rank_steps(all, 1, {true, true, true, true}).wait_s)[0], 0.0055, 1e-12);  // (2 + 10 + 10) / 4
}

TEST(StepRecords, AppendingSlicesKeepsEverySeriesInStepOrder) {
  StepSeries series;  // before the first slice: no wait or imbalance series yet
  StepSeries slice;
  slice.step_s = {0.3, 0.4};
  slice.compute_s = {0.2, 0.3};
  slice.comm_s = {0.1, 0.1};
  slice.exposed_comm_s = {0.05, 0.1};
  slice.wait_s = std::vector<double>{0.0, 0.01};
  slice.imbalance_s = std::vector<double>{0.02, 0.0};
  slice.slowest_rank = std::vector<int>{1, 0};
  slice.slowest_lead_s = std::vector<double>{0.003, 0.001};
  append_steps(series, slice);
  append_steps(series, StepSeries{});  // a flush with no new steps on another rank
  append_steps(series, slice);
  EXPECT_EQ(series.step_s, std::vector<double>({0.3, 0.4, 0.3, 0.4}));
  EXPECT_EQ(series.compute_s, std::vector<double>({0.2, 0.3, 0.2, 0.3}));
  EXPECT_EQ(series.comm_s, std::vector<double>({0.1, 0.1, 0.1, 0.1}));
  EXPECT_EQ(series.exposed_comm_s, std::vector<double>({0.05, 0.1, 0.05, 0.1}));
  EXPECT_EQ(series.wait_s, std::vector<double>({0.0, 0.01, 0.0, 0.01}));
  EXPECT_EQ(series.imbalance_s, std::vector<double>({0.02, 0.0, 0.02, 0.0}));
  EXPECT_EQ(series.slowest_rank, std::vector<int>({1, 0, 1, 0}));
  EXPECT_EQ(series.slowest_lead_s, std::vector<double>({0.003, 0.001, 0.003, 0.001}));
}


TEST(StepRecords, TheSlowestTrainingRankLeadsTheMedianOfTheOthers) {
  // Three steps of four ranks, rank r's step s at r × 3 + s; rank 3 only serves in the second call.
  const std::vector<double> compute_s = {0.010, 0.020, 0.010,   // rank 0
                                         0.012, 0.020, 0.011,   // rank 1
                                         0.030, 0.010, 0.009,   // rank 2
                                         0.011, 0.050, 0.012};  // rank 3
  const SlowestRanks all = slowest_rank_per_step(compute_s, 3, {true, true, true, true});
  EXPECT_EQ(all.rank, std::vector<int>({2, 3, 3}));
  ASSERT_EQ(all.lead_s.size(), 3U);
  EXPECT_NEAR(all.lead_s[0], 0.030 - 0.011, 1e-12);  // the other three's median: 0.011
  EXPECT_NEAR(all.lead_s[1], 0.050 - 0.020, 1e-12);
  EXPECT_NEAR(all.lead_s[2], 0.012 - 0.010, 1e-12);
  const SlowestRanks served = slowest_rank_per_step(compute_s, 3, {true, true, true, false});
  EXPECT_EQ(served.rank, std::vector<int>({2, 0, 1}));  // a tie goes to the lowest rank
  EXPECT_NEAR(served.lead_s[0], 0.030 - 0.011, 1e-12);  // two others: the mean of 0.010 and 0.012
  EXPECT_NEAR(served.lead_s[1], 0.005, 1e-12);  // tied with rank 1, ahead of the others' median (0.015)
  // Two ranks: the whole of the slower one's lead, not half of it against their mean.
  const SlowestRanks two = slowest_rank_per_step({0.005, 0.015}, 1, {true, true});
  EXPECT_EQ(two.rank, std::vector<int>({1}));
  EXPECT_NEAR(two.lead_s[0], 0.010, 1e-12);
  // One training rank is the slowest by nothing.
  const SlowestRanks alone = slowest_rank_per_step({0.01, 0.02}, 2, {true});
  EXPECT_EQ(alone.rank, std::vector<int>({0, 0}));
  EXPECT_EQ(alone.lead_s, std::vector<double>({0.0, 0.0}));
  EXPECT_THROW(slowest_rank_per_step({0.01, 0.02, 0.03}, 2, {true, true}), Error);
}

// Rank r's compute at step i: known, so that the sample can be checked value by value.
double compute_at(std::size_t rank, int64_t step) { return 0.001 * static_cast<double>(rank + 1) + 1e-9 * static_cast<double>(step); }

std::vector<double> slice_of(std::size_t ranks, int64_t first, std::size_t steps) {
  std::vector<double> compute_s(ranks * steps);
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t s = 0; s < steps; ++s) compute_s[r * steps + s] = compute_at(r, first + static_cast<int64_t>(s));
  }
  return compute_s;
}

void expect_bounded_sample(const RankComputeSample& sample, std::size_t ranks, int64_t steps) {
  const std::size_t limit = rank_sample_limit(ranks);
  ASSERT_LE(sample.steps.size(), limit);
  ASSERT_EQ(sample.compute_s.size(), sample.steps.size());
  EXPECT_EQ(sample.stride & (sample.stride - 1), 0) << sample.stride;  // a power of two
  // Every multiple of the stride, no more: spread evenly over the run, and as fine as the bound allows.
  EXPECT_EQ(static_cast<int64_t>(sample.steps.size()), (steps + sample.stride - 1) / sample.stride);
  if (steps >= static_cast<int64_t>(limit)) {
    EXPECT_GE(2 * sample.steps.size(), limit);
  }
  for (std::size_t i = 0; i < sample.steps.size(); ++i) {
    EXPECT_EQ(sample.steps[i], static_cast<int64_t>(i) * sample.stride);
    ASSERT_EQ(sample.compute_s[i].size(), ranks);
    for (std::size_t r = 0; r < ranks; ++r) EXPECT_EQ(sample.compute_s[i][r], compute_at(r, sample.steps[i]));
  }
}

TEST(StepRecords, TheRankSampleStaysWithinItsBoundForALongRun) {
  EXPECT_EQ(rank_sample_limit(4), 64U);
  EXPECT_EQ(rank_sample_limit(1024), 16U);
  EXPECT_EQ(rank_sample_limit(4096), 8U);  // 8 × 4096 values: max(16384, 8 × ranks)
  // A short run keeps every step.
  const RankComputeSample short_run = sample_rank_compute(slice_of(4, 0, 10), 10, 0, 4);
  EXPECT_EQ(short_run.stride, 1);
  expect_bounded_sample(short_run, 4, 10);
  // A long run gathered as partial flushes gather it: slices of growing size, appended one by
  // one, 1,000,003 steps in all; the sample is bounded after every slice and at the end is the
  // sample of the whole run.
  constexpr std::size_t kRanks = 4;
  StepSeries series;
  int64_t done = 0;
  std::size_t slice = 1;
  while (done < 1000003) {
    const std::size_t steps = std::min<std::size_t>(slice, 1000003 - static_cast<std::size_t>(done));
    StepSeries more;
    more.rank_compute = sample_rank_compute(slice_of(kRanks, done, steps), steps, static_cast<std::size_t>(done), kRanks);
    append_steps(series, more);
    done += static_cast<int64_t>(steps);
    ASSERT_TRUE(series.rank_compute.has_value());
    expect_bounded_sample(*series.rank_compute, kRanks, done);
    slice = slice * 3 + 7;
  }
  EXPECT_EQ(series.rank_compute->stride, 16384);  // 1,000,003 / 16384 → 62 sampled steps
  const RankComputeSample whole = sample_rank_compute(slice_of(kRanks, 0, 1000003), 1000003, 0, kRanks);
  EXPECT_EQ(series.rank_compute->steps, whole.steps);
  EXPECT_EQ(series.rank_compute->compute_s, whole.compute_s);
  EXPECT_THROW(sample_rank_compute({0.1, 0.2, 0.3}, 2, 0, 2), Error);
}

}  // namespace
}  // namespace harness
