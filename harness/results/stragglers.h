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
// The straggler named in the console's table is the flagged rank, else the rank that was the
// slowest most often (the lowest on a tie); stats.csv names only what is flagged.
//
// The flag: against the noise of the same runs, not a constant. A configuration is flagged
// "rank" when one training rank is consistently slower than the others, and by enough to matter:
//   - consistently: over the sampled steps, cut into blocks of consecutive steps (placement lasts
//     whole runs, so steps are not independent), its standing among the ranks is above what
//     exchangeable ranks give, by a one-sided test at kFalseAlarmRate / 2 split over the ranks
//     (consistent_lead.h has the test);
//   - by enough: its compute exceeds the median of the others' by kMinExcessShare of the median
//     rank's compute in the median sampled step, and what it makes the others wait costs them
//     kMinWaitShare of the median step or more (a straggler worth chasing costs throughput: on
//     this 2-core VM, 4 undelayed ranks had one rank 12-20% slower in compute, consistently, at a
//     wait of 2-4% of the step; a 0.05 ms sleep in each step cost 9-14%).
// With two hosts or more and no rank flagged, the same test of each host's ranks against the
// others' (at kFalseAlarmRate / 2 split over the hosts) flags "host". Where no rank is slower, a
// configuration is flagged with probability at most kFalseAlarmRate (measured on synthetic runs
// by tests/results/stragglers_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/results/record.h"

namespace harness {

inline constexpr double kFalseAlarmRate = 0.001;
inline constexpr double kMinExcessShare = 0.1;
inline constexpr double kMinWaitShare = 0.05;

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
  // The flag's test over the sampled steps (consistent_lead.h): blocks of steps, its mean
  // standing (-1 the fastest in every step, +1 the slowest), its one-sided p, and the median
  // step's excess of its compute over the others' median.
  int blocks = 0;
  double standing = 0;
  double p_value = 1;
  double excess_s = 0;
};

struct Stragglers {
  bool measured = false;  // successful runs whose steps name their slowest rank, 2+ training ranks
  int64_t steps = 0;      // pooled over the runs
  int runs = 0;
  std::vector<Straggling> ranks;  // every training rank, in rank order
  std::vector<Straggling> hosts;  // in order of their first rank
  // The flagged rank; else the rank most often the slowest (the lowest on a tie).
  Straggling straggler;
  double median_compute_s = 0;  // the training ranks' sampled compute, pooled (kMinExcessShare's scale)
  double median_step_s = 0;     // the runs' steps, pooled (kMinWaitShare's scale); 0 when not recorded
  // The one-sided p below which a rank is consistently slower: kFalseAlarmRate / 2 over the
  // training ranks (a host: over the hosts).
  double rank_p_limit = 0;
  double host_p_limit = 0;
  // "rank" when the straggler is flagged; "host" when a host is (with two hosts or more) but no
  // rank is; "" when nothing is.
  std::string flagged;
  const Straggling* flagged_entry() const;  // the flagged rank or host; null when nothing is
};

// Over the successful training runs of one configuration (their measurements). Runs without the
// per-step slowest rank (records before version 8) are left out.
Stragglers find_stragglers(const std::vector<const Measurements*>& runs);

// One line for the console and the report: "rank 2 (nodeb) was the slowest in 97% of the steps,
// leading the others' median by 20.1 ms (p95 21.3 ms), a wait of 15.2 ms per step".
std::string describe_straggling(const Straggling& entry);
// Why it is flagged: "its compute 0.2 ms (20% of the median rank's) above the others' median in
// the median sampled step, a wait of 12% of the median step, consistently: p 3e-09 over 15 blocks
// of steps (flagged at p <= 0.000125)".
std::string describe_flag(const Stragglers& stragglers);

}  // namespace harness
