// Whether a training rank (or a host's ranks) is consistently slower than the others, judged
// against the noise of the same runs: the test behind the straggler flag (stragglers.h).
//
// In each sampled step (the records' rank_compute) every training rank has a standing: the
// ranks it took longer than, less those it took less long than, over the others, from -1 (the
// fastest) to +1 (the slowest); a group's standing is its ranks' mean. Ranks that differ only by
// noise are exchangeable in a step, so every group's standing is 0 on average, whatever the noise
// looks like (a scheduler slice of 5 ms moves a standing by no more than a lead of 0.1 ms does).
//
// Steps are not independent: what makes a rank slow (a core it shares, a busy neighbour, a
// throttled socket) lasts for stretches of steps, and over a run may last the whole of it, which
// is what a straggler is. So the steps of each run are cut into blocks of consecutive sampled
// steps (of a long run, steps `stride` apart) that hold about kBlockSteps steps' worth of
// independent noise: kBlockSteps times the integrated autocorrelation time of the run's
// standings (1 + 2 (r1 + r2 + ...), summed while pairs of terms stay positive, as MCMC's
// effective sample sizes are estimated; each group's standings about its own mean, so that a group
// steadily slower is not taken for noise). A group's block means are the units: their mean over
// the blocks of all runs against their own spread, a one-sided Student t test with blocks - 1
// degrees of freedom (p = 0 when every block has the same standing above 0). Noise that lasts
// about as long as the run cannot be told from a rank slower for that run; on synthetic runs
// (tests/results/consistent_lead_test.cpp) a drift lasting a third of a run was flagged in 8 of
// 1,000, noise lasting a few steps in 0 of 4,000.
#pragma once

#include <vector>

namespace harness {

// Steps' worth of independent noise in a block.
inline constexpr int kBlockSteps = 4;

// One run's sampled steps: per step, each training rank's compute (seconds), and the group each
// training rank belongs to (an index below the number of groups).
struct RunCompute {
  std::vector<std::vector<double>> compute_s;  // [step][training rank]
  std::vector<int> group_of;                   // [training rank]
};

struct Consistency {
  int blocks = 0;        // blocks of steps, over the runs, in which the group had others to be slower than
  double standing = 0;   // the mean of its block means, -1 to +1
  double p_value = 1;    // one-sided: of a mean standing this high among exchangeable ranks; 1 below 2 blocks
  double excess_s = 0;   // over the sampled steps, the median of its ranks' mean compute less the
                         // median of the other groups' ranks
  double compute_s = 0;  // the median of its ranks' sampled compute
};

// For each of `groups` groups, over the runs; a group with no ranks, or with every rank of its
// runs, has no blocks (p 1).
std::vector<Consistency> consistency_of(const std::vector<RunCompute>& runs, int groups);

// A training rank's standing in one step among `compute_s` (the step's training ranks), -1 to +1;
// 0 alone.
double standing_in_step(const std::vector<double>& compute_s, std::size_t rank);

}  // namespace harness
