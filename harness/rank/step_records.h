// Per-step times of all ranks, reduced on rank 0 to what a record keeps (record.h StepSeries).
#pragma once

#include <vector>

#include "backends/communicator.h"
#include "harness/results/record.h"
#include "workloads/loop_result.h"

namespace harness {

// Collective. On rank 0: for every step, the means over the training ranks of their step,
// compute, communication and exposed times (a rank's compute and exposed time add up to at most
// its step, and so do the means), how much of the exposed time was waiting for the slowest
// training rank's compute (the mean of each rank's wait; with held times, StepTimes::held_s, those
// instead), and the step's load imbalance (with held times, the held wait: what a rank waited for
// slower ones). `training[r]`: whether rank r computes gradients (all but a parameter server
// that only serves). Also, per step, the slowest training rank and its lead over the median one
// (slowest_rank_per_step), and every rank's compute time at a bounded sample of the steps
// (sample_rank_compute): what the records keep of each rank is bounded whatever the run's length.
// Other ranks get an empty series.
StepSeries gather_step_series(const StepTimes& local, const std::vector<bool>& training,
                              const Communicator& communicator);
// The same for this rank's steps from `first_step` on (every rank passes the same one): a partial
// flush gathers only what is new since the previous one. Throws Error when `first_step` is past
// the last step.
StepSeries gather_step_series(const StepTimes& local, std::size_t first_step,
                              const std::vector<bool>& training, const Communicator& communicator);

// The part of gather_step_series that averages, per step, the training ranks' times (`all`, rank
// r's step s at index r × steps + s) and their waits for the slowest training rank's compute:
// step, compute, comm, exposed and wait series. Means rather than one rank's times: in a
// synchronous step every rank's step lasts about as long, and which one took longest is chance,
// while one rank's split of it between compute and waiting is not (a straggler computes, the
// others wait). A rank that only serves is left out. Throws Error when the sizes disagree.
StepSeries mean_training_rank_steps(const StepTimes& all, std::size_t steps, const std::vector<bool>& training);

// Appends `more`'s steps to `series` (a series gathered in slices is the series gathered at once).
void append_steps(StepSeries& series, const StepSeries& more);

// Per step, from every rank's compute time (rank r's step s at compute_s[r × steps + s], as
// gathered): the slowest training rank's compute minus the mean training rank's. A synchronous
// step waits for its slowest rank, so this is how long a rank waits, on average, before the
// exchange can start: jitter and imbalance, not communication. Ranks with training[r] false are
// left out; 0 with fewer than two. Throws Error when the sizes disagree.
std::vector<double> load_imbalance_per_step(const std::vector<double>& compute_s,
                                            std::size_t steps, const std::vector<bool>& training);

// Per step, from every rank's compute time (laid out as for load_imbalance_per_step): the
// training rank whose compute took longest (the lowest on a tie) and its lead, its compute minus
// the median of the other training ranks' (the mean of the two middle ones for an even count; 0
// with no other).
struct SlowestRanks {
  std::vector<int> rank;
  std::vector<double> lead_s;
};
SlowestRanks slowest_rank_per_step(const std::vector<double>& compute_s, std::size_t steps,
                                   const std::vector<bool>& training);

// Every rank's compute time at the steps of the slice [first_step, first_step + steps) (laid out
// as for load_imbalance_per_step, `ranks` of them) that are multiples of the smallest power of
// two keeping at most rank_sample_limit(ranks) of them (record.h RankComputeSample).
RankComputeSample sample_rank_compute(const std::vector<double>& compute_s, std::size_t steps,
                                      std::size_t first_step, std::size_t ranks);

}  // namespace harness
