// What every training scheme's rank half does alike (training_scheme.h): take the workload's
// parameters for exchange, give rank 0 the BatchNorm statistics of a rank that trained, and
// evaluate and record an epoch on rank 0.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "backends/communicator.h"
#include "harness/common/clock.h"
#include "workloads/loop_result.h"
#include "workloads/workload.h"

namespace harness {

// The workload's parameters, each with an allocated .grad (in the parameter's memory layout) so
// that nothing meets an undefined gradient. Throws NotSupported, naming `scheme`, for parameters
// the flat buffers cannot hold: tied weights, anything but dense float32, and with `host_only`
// anything outside host memory.
std::vector<torch::Tensor> exchangeable_parameters(Workload& workload, std::string_view scheme, bool host_only);

// Collective: every rank's `parameters` become rank 0's, in one broadcast of one host buffer
// (staged from and back to the device when they live on a GPU).
void broadcast_from_rank_zero(std::vector<torch::Tensor>& parameters, const Communicator& communicator);

// Collective: rank 0 takes `from_rank`'s buffers (BatchNorm's running statistics), as DDP's
// broadcast_buffers shares rank 0's, when rank 0 only serves and never ran a forward pass.
void share_buffers_with_rank_zero(Workload& workload, const Communicator& communicator, int from_rank);

// The loss curve as a training loop keeps it: this rank's losses summed over windows of
// `window_steps` steps (which may span epochs); the windows closed during an epoch are summed over
// the ranks after it, outside the timed steps, so that a step carries no extra communication.
class LossWindows {
 public:
  // `samples_per_step`: over all ranks; `total_steps`: the run's (the last window ends there).
  LossWindows(int64_t window_steps, int64_t total_steps, int64_t samples_per_step)
      : window_steps_(window_steps), total_steps_(total_steps), samples_per_step_(samples_per_step) {}
  // A loss this rank computed in the running step (a batch's, or a micro-batch's share of it).
  void add(double loss) {
    window_loss_ += loss;
    epoch_loss_ += loss;
  }
  // After every step, timed or not, on every rank.
  void end_step();
  // Collective, after an epoch: the epoch's losses summed over the ranks (the return value), and
  // the windows it closed (as many on every rank) appended to rank 0's `curve`, each the mean of
  // `losses_per_step` losses a step.
  double end_epoch(const Communicator& communicator, int losses_per_step, std::vector<LossPoint>& curve);

 private:
  int64_t window_steps_;
  int64_t total_steps_;
  int64_t samples_per_step_;
  int64_t steps_done_ = 0;
  int64_t steps_in_window_ = 0;
  double window_loss_ = 0;
  double epoch_loss_ = 0;
  std::vector<double> closed_losses_;    // sums of the windows closed in this epoch
  std::vector<int64_t> closed_steps_;    // their lengths in steps
  std::vector<int64_t> closed_samples_;  // samples seen (all ranks) at their ends
};

// What rank 0 knows of an epoch when it has trained it.
struct EpochTrained {
  int epoch = 0;
  int epochs = 0;            // the point's, for the progress line
  double train_loss = 0;     // the mean over the epoch's batches
  double train_time_s = 0;
  int64_t samples_seen = 0;  // cumulative, all ranks
};

// Rank 0: evaluates the model, appends the epoch's record to `result` (its evaluation time to
// eval_time_s), and writes a progress line into the point's log at most about once a second (and
// after the last epoch): a point stopped by its time limit shows how far it got, and a 3000-epoch
// run is not 3000 lines.
void record_evaluated_epoch(Workload& workload, const EpochTrained& trained, LoopResult& result,
                            Clock::time_point& last_progress_line);

}  // namespace harness
