// Stragglers: which training rank, and which host, holds the others up. Each step of a record
// (version 8) names the training rank whose compute took longest and its lead, its compute minus
// the median of the other training ranks' (rank/step_records.h); over a configuration's successful runs, their
// steps pooled, each training rank has
//
//   share  the fraction of the steps in which it was the slowest
//   lead   the median and the 95th percentile of its lead in those steps
//   wait   what it made the others wait, per step of the run: the sum, over the steps in which it
//          was the slowest, of the step's load imbalance (its compute minus the mean training
//          rank's), divided by all the steps; the ranks' waits add up to the mean imbalance
//          (metrics.h imbalance_time_s), the "waiting for the slowest rank" of the breakdown
//
// and each host the same, a host being the slowest in a step when the slowest rank is one of its.
// The straggler is the rank that was the slowest most often (the lowest on a tie).
//
// The flag: a configuration is flagged when one rank (or, with two hosts or more, one host) is
// the slowest in more than half of the steps, and that cannot be chance or noise (stragglers.cpp
// says why each condition is there):
//   - its share is more than half, and more than chance gives: with k training ranks and no
//     straggler each rank is the slowest with probability 1/k (a host with m of them, m/k), so
//     its count of slowest steps must exceed the binomial's mean by kChanceSigmas standard
//     deviations (with 2 ranks, half the steps is what chance gives);
//   - its median lead is above the noise floor: max(kMinLeadS, kMinLeadShare × the median
//     rank's compute, kJitterMultiple × the ranks' typical jitter), the jitter of a rank being
//     the p95 of its sampled compute less its median, and the typical one the median over the
//     other ranks with kJitterMinSamples samples or more.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/results/record.h"

namespace harness {

inline constexpr double kChanceSigmas = 3.0;
// A rank waiting for a core on an oversubscribed node trails the others by a fraction of a
// millisecond for whole runs (stragglers.cpp has the measurements).
inline constexpr double kMinLeadS = 250e-6;
inline constexpr double kMinLeadShare = 0.05;
inline constexpr double kJitterMultiple = 2.0;
inline constexpr int64_t kJitterMinSamples = 20;

// One training rank (or host) of a configuration.
struct Straggling {
  int rank = -1;      // -1 for a host
  std::string host;   // the rank's host where it was the slowest most often ("" when the records do not say)
  int ranks = 1;      // a host's training ranks (the most in any run)
  double chance = 0;  // a host: the share of the steps chance alone gives its ranks (their share of
                      // all ranks' steps over the runs)
  int64_t slowest_steps = 0;
  double share = 0;
  double lead_median_s = 0;
  double lead_p95_s = 0;
  double wait_per_step_s = 0;
  // A rank's compute time over the sampled steps (RankComputeSample): 5th, 50th and 95th
  // percentiles; 0 for a host or without a sample.
  double compute_p05_s = 0;
  double compute_median_s = 0;
  double compute_p95_s = 0;
  int64_t compute_samples = 0;
};

struct Stragglers {
  bool measured = false;  // successful runs whose steps name their slowest rank, 2+ training ranks
  int64_t steps = 0;      // pooled over the runs
  int runs = 0;
  std::vector<Straggling> ranks;  // every training rank, in rank order
  std::vector<Straggling> hosts;  // in order of their first rank
  Straggling straggler;           // the rank most often the slowest
  double median_compute_s = 0;    // the training ranks' sampled compute, pooled (the noise floor's)
  double typical_jitter_s = 0;    // the median over the other ranks of each one's compute p95 less its median
  double noise_floor_s = 0;
  // "rank" when the straggler is flagged; "host" when a host is (with two hosts or more) but no
  // rank is; "" when nothing is.
  std::string flagged;
  const Straggling* flagged_entry() const;  // the flagged rank or host; null when nothing is
};

// Over the successful training runs of one configuration (their measurements). Runs without the
// per-step slowest rank (records before version 8) are left out.
Stragglers find_stragglers(const std::vector<const Measurements*>& runs);

// Whether `count` of `steps` is more than chance gives a candidate that is the slowest with
// probability `chance` in each step, by kChanceSigmas standard deviations, and more than half.
bool beyond_chance(int64_t count, int64_t steps, double chance);

// One line for the console and the report: "rank 2 (nodeb) was the slowest in 97% of the steps,
// leading the others' median by 20.1 ms (p95 21.3 ms), a wait of 15.2 ms per step".
std::string describe_straggling(const Straggling& entry);

}  // namespace harness
