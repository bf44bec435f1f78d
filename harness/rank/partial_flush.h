// Partial measurements while a point trains: every few seconds, between two steps, all ranks
// gather the step times measured since the previous flush onto rank 0, which appends them to the
// series so far and writes the measurements so far (`complete: false`); the rank program's final
// write replaces them. A point stopped by its time limit (the harness's timeout, SLURM's) thus
// keeps its step timings and epochs up to a few seconds before it was stopped.
//
// Ordinary steps carry no extra communication: every rank knows the step of the next flush,
// which rank 0 chose and broadcast at the end of the previous one.
//
// Threading: the training thread, between steps (see LoopFlush in workloads/loop_result.h).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "backends/communicator.h"
#include "harness/results/record.h"
#include "workloads/loop_result.h"

namespace harness {

// When to flush, chosen by rank 0 from what it has measured (no MPI: testable alone). The first
// flush comes after the first timed step: it is cheap (one step to gather, a small file), proves
// the point got into training, and gives rank 0 a step time to plan with, which nothing before
// it does without communication inside the steps. The second comes about first_interval_s of wall
// time later, so that a point stopped by a limit of a few seconds keeps its first second of steps
// and the epochs shorter than that; then the intervals double up to interval_s, so that a point
// stopped early loses at most about the last half of its training, and a later one at most about
// interval_s. Epoch ends are not waited for: a CNN epoch on MNIST lasts minutes, and one shorter
// than a second is in the second flush anyway. The step time the first flush plans with leaves
// out evaluation and is the first (slowest) step's, so the second may come early or late; from
// the second on, rank 0 plans with the wall time between flushes, evaluation included.
// A flush writes the whole series so far, so its cost grows with the run; the interval grows
// with it, so that flushing takes at most about max_share of the wall time.
class FlushCadence {
 public:
  static constexpr std::size_t kFirstFlushStep = 1;

  explicit FlushCadence(double first_interval_s = 1.0, double interval_s = 5.0,
                        double max_share = 0.02);
  // At a flush after `timed_steps` timed steps: the number of timed steps after which the next
  // one is due. `elapsed_s`: the wall time of the steps since the previous flush (for the first
  // flush, the sum of the timed steps' times); `flush_s`: how long this flush has taken so far.
  std::size_t next(std::size_t timed_steps, double elapsed_s, double flush_s);

 private:
  double first_interval_s_;
  double interval_s_;
  double max_share_;
  std::size_t previous_steps_ = 0;
  int flushes_ = 0;
};

class PartialFlush final : public LoopFlush {
 public:
  // Called on rank 0 only, inside a flush: writes the measurements so far. `steps`: every rank's
  // timed steps so far, reduced as gather_step_series does.
  using Writer = std::function<void(const LoopResult& so_far, const StepSeries& steps)>;

  // `training[r]`: whether rank r computes gradients (as for gather_step_series).
  PartialFlush(const Communicator& communicator, std::vector<bool> training, Writer write,
               FlushCadence cadence = FlushCadence());

  bool due(std::size_t timed_steps) const override { return timed_steps >= next_flush_step_; }
  // Collective: gathers the new steps, has rank 0 write and choose the next flush's step,
  // broadcasts it, and ends with a barrier.
  double flush(const LoopResult& so_far) override;

  int flushes() const { return flushes_; }
  // The series gathered so far (rank 0; empty on the other ranks).
  const StepSeries& steps() const { return steps_; }

 private:
  Communicator communicator_;
  std::vector<bool> training_;
  Writer write_;
  FlushCadence cadence_;
  std::size_t next_flush_step_ = FlushCadence::kFirstFlushStep;
  std::size_t gathered_ = 0;  // this rank's steps already gathered
  StepSeries steps_;
  double previous_end_ = 0;   // MPI_Wtime() at the end of the previous flush
  int flushes_ = 0;
};

}  // namespace harness
