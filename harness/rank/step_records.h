// Per-step times of all ranks, reduced on rank 0 to what a record keeps (record.h StepSeries).
#pragma once

#include <vector>

#include "backends/communicator.h"
#include "harness/results/record.h"
#include "workloads/loop_result.h"

namespace harness {

// Collective. On rank 0: for every step, the times of the rank whose step took longest (compute
// and communication from that same rank, so they add up to at most its step time), how much of
// that rank's exposed time was waiting for the slowest training rank's compute, and the step's
// load imbalance. `training[r]`: whether rank r computes gradients (all but a parameter server
// that only serves). Other ranks get an empty series.
StepSeries gather_step_series(const StepTimes& local, const std::vector<bool>& training,
                              const Communicator& communicator);
// The same for this rank's steps from `first_step` on (every rank passes the same one): a partial
// flush gathers only what is new since the previous one. Throws Error when `first_step` is past
// the last step.
StepSeries gather_step_series(const StepTimes& local, std::size_t first_step,
                              const std::vector<bool>& training, const Communicator& communicator);

// Appends `more`'s steps to `series` (a series gathered in slices is the series gathered at once).
void append_steps(StepSeries& series, const StepSeries& more);

// Per step, from every rank's compute time (rank r's step s at compute_s[r × steps + s], as
// gathered): the slowest training rank's compute minus the mean training rank's. A synchronous
// step waits for its slowest rank, so this is how long a rank waits, on average, before the
// exchange can start: jitter and imbalance, not communication. Ranks with training[r] false are
// left out; 0 with fewer than two. Throws Error when the sizes disagree.
std::vector<double> load_imbalance_per_step(const std::vector<double>& compute_s,
                                            std::size_t steps, const std::vector<bool>& training);

}  // namespace harness
