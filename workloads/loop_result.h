// What a rank's training loop reports: its own per-step times and, on rank 0, a record per
// epoch. The data-parallel trainer (harness/rank/trainer.h) and the K-means driver
// (kmeans_driver.h) both fill it; the rank program gathers the ranks' steps and writes them into
// the point's measurements. While they run, both offer their results so far to a LoopFlush.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace harness {

struct EpochRecord {
  int epoch = 0;              // 1-based
  double train_loss = 0;      // mean of the steps' global-batch losses
  double test_loss = 0;
  double test_accuracy = 0;
  double train_time_s = 0;    // this epoch's training wall time (timed steps), evaluation excluded
  double eval_time_s = 0;     // the held-out evaluation after it
  int64_t samples_seen = 0;   // cumulative, all ranks, warm-up steps included
};

// The mean training loss over a window of steps (loss_every of them, all ranks' batches).
struct LossPoint {
  int64_t samples_seen = 0;  // cumulative, all ranks, at the window's end
  double train_loss = 0;
};

// Per-step times of one rank.
struct StepTimes {
  std::vector<double> compute_s;  // forward, backward and optimizer update
  std::vector<double> comm_s;     // gradient reduction (with packing, unless overlapped)
  std::vector<double> exposed_s;  // what the step waited for communication after backward
  std::vector<double> step_s;
  // What each step waited for the scheme's own rule rather than for bytes: under async_ps, the
  // time a server held the reply back for the staleness bound. Empty under synchronous schemes,
  // whose wait (for the slowest rank's compute) the gathered compute times tell.
  std::vector<double> held_s;
};

// Under async_ps, what a rank counted of the scheme (rank_facts gathers them, record.h's
// AsyncPsFacts keeps them).
struct AsyncPsCounters {
  // Gradients this server applied, by their staleness (index: steps; see async_ps.h).
  std::vector<int64_t> staleness_counts;
  double busy_s = 0;     // this server's time handling messages in the timed segments
  double serving_s = 0;  // its time serving the timed segments, waits included
  int64_t batches = 0;   // this worker's batches in the timed segments (handed out on demand)
};

// Under scheme pipeline, what this rank measured of its stage over the timed steps (sums; the
// scheme's add_measurements turns them into record.h's PipelineStageFacts).
struct PipelineCounters {
  double forward_s = 0;
  double backward_s = 0;
  double receive_wait_s = 0;
  double send_wait_s = 0;
  double average_s = 0;
  int most_held = 0;
  int64_t peak_activation_bytes = 0;  // held after a forward pass, above the step's start (median step)
  int64_t peak_step_bytes = 0;        // the allocator's peak in the step, above its start (median step)
};

struct LoopResult {
  std::vector<EpochRecord> epochs;  // filled on rank 0
  std::vector<LossPoint> loss_curve;  // rank 0; complete up to the last finished epoch
  StepTimes steps;                  // this rank's
  int64_t steps_per_epoch = 0;
  double train_time_s = 0;          // sum over epochs, warm-up steps and evaluation excluded
  double eval_time_s = 0;           // sum of the evaluations
  double flush_time_s = 0;          // sum of the flushes (LoopFlush), excluded like evaluation
  int64_t samples_trained = 0;      // all ranks, in the timed steps (warm-up excluded)
  AsyncPsCounters async_ps;         // scheme async_ps: this rank's (a server's) counts
  PipelineCounters pipeline;        // scheme pipeline: this rank's stage
};

// What a training loop hands its results so far to, between steps, so that a point stopped by its
// time limit keeps what it measured (harness/rank/partial_flush.h writes them). Before every step
// the loop asks due(); when it answers yes, every rank calls flush() there. The previous step has
// ended, so no reduction is in flight (with overlap neither: the communication thread is idle
// until the next begin_step), and flush() may make MPI calls on the caller's thread.
// Contract: due() answers the same on every rank for the same number of timed steps and asks
// nothing of the other ranks, so that ordinary steps carry no extra communication.
class LoopFlush {
 public:
  virtual ~LoopFlush() = default;
  // Whether flush() is due before the next step, `timed_steps` timed steps into the loop.
  virtual bool due(std::size_t timed_steps) const = 0;
  // Collective. `so_far`: this rank's results up to now (epochs on rank 0: those finished). Returns
  // the seconds it took on this rank, which the loop leaves out of its training time.
  virtual double flush(const LoopResult& so_far) = 0;
};

// Before a loop's step: offers `flush` (null: none) the results so far when it is due, adding its
// time to result.flush_time_s. Returns that time (0 when none was due). Collective when due.
inline double flush_if_due(LoopFlush* flush, LoopResult& result) {
  if (flush == nullptr || !flush->due(result.steps.step_s.size())) return 0;
  const double flush_s = flush->flush(result);
  result.flush_time_s += flush_s;
  return flush_s;
}

}  // namespace harness
