// Data-parallel SGD over MPI: what every rank runs for one training point, under scheme "sync"
// (synchronous, below) or "local_sgd" (the same loop, exchanging models every sync_every steps
// instead of gradients every step: local_sgd.h). The synchronous schemes' TrainingScheme.
//
// Each step, worker w of W trains on positions perm[(s·W + w)·b, (s·W + w + 1)·b) of the epoch's
// permutation (same seed and epoch on every rank, so the workers' batches are disjoint and
// together the same global batch one rank would take with batch W·b). Gradients are summed with
// the chosen GradientSync backend, divided by W, and every rank applies the same SGD update.
// W is the number of ranks, or one less for a parameter server whose rank 0 does not train.
//
// Threading: the caller's thread, plus a communication thread when settings.overlap is set; MPI
// must then be initialised at MPI_THREAD_SERIALIZED (see gradient_buckets.h).
#pragma once

#include <memory>
#include <vector>

#include "backends/gradient_sync.h"
#include "harness/rank/gradient_buckets.h"
#include "harness/rank/local_sgd.h"
#include "harness/rank/timeline.h"
#include "harness/rank/training_scheme.h"
#include "harness/study/settings.h"
#include "workloads/loop_result.h"
#include "workloads/workload.h"

namespace harness {

class DataParallelTrainer final : public TrainingScheme {
 public:
  // The trainer keeps references: workload and backend must outlive it.
  DataParallelTrainer(Workload& workload, GradientSync& backend, const Communicator& communicator,
                      const PointSettings& settings);

  // Copies rank 0's parameters to every rank, so all start from the same model.
  void broadcast_parameters() override;
  // One step's gradient exchange: begin_step() before the backward pass, average_gradients()
  // after it; then every rank's .grad holds the mean over the training ranks.
  void begin_step() { buckets_.begin_step(); }
  BucketTiming average_gradients() { return buckets_.finish_step(); }
  int64_t steps_per_epoch() const;
  std::size_t bucket_count() const override { return buckets_.bucket_count(); }
  std::size_t hook_launches() const { return buckets_.hook_launches(); }
  // Trains settings.epochs epochs, evaluating on rank 0 after each. Collective. With a `flush`,
  // offers it the results so far between steps (loop_result.h); its time, like evaluation's, is
  // left out of the epochs' training time and summed in flush_time_s.
  LoopResult train(LoopFlush* flush = nullptr) override;
  // train() then traces a sample of its timed steps into `timeline` (timeline.h), which must
  // outlive the trainer's use.
  void set_timeline(Timeline* timeline) override {
    timeline_ = timeline;
    buckets_.set_timeline(timeline);
  }

 private:
  Workload& workload_;
  Communicator communicator_;
  PointSettings settings_;
  // Initialised in this order: the buckets need the layout.
  WorkerLayout layout_;
  std::vector<torch::Tensor> parameters_;
  GradientBuckets buckets_;
  // Scheme local_sgd: the models' averaging, every sync_every steps and at each epoch's end; null
  // under sync, whose steps average the gradients instead.
  std::unique_ptr<ModelAveraging> averaging_;
  Timeline* timeline_ = nullptr;

  // Collective, before rank 0 evaluates: a rank 0 that only serves gets the first training
  // rank's buffers (workload.h).
  void share_buffers_with_an_evaluating_server();
  void trace_step(Clock::time_point start, Clock::time_point computed, Clock::time_point reduced,
                  Clock::time_point end);

  // train()'s steps, over the state it carries (trainer.cpp).
  struct TrainingRun;
  void start_training(LoopFlush* flush, TrainingRun& run);
  void train_epoch(int epoch, TrainingRun& run);
  // MPI_Barrier, marked as the harness's own collective in the rank's progress slot.
  void epoch_barrier() const;
  void train_step(int epoch, int64_t step, int64_t untimed, TrainingRun& run);
  void record_epoch(int epoch, double loss_sum, double epoch_time, TrainingRun& run);
};

// Plain SGD, parameter -= lr × gradient, on every parameter (the trainer's update, a function of
// its own for the step benchmark). Call under torch::NoGradGuard.
void sgd_update(std::vector<torch::Tensor>& parameters, float lr);

}  // namespace harness
