#include "harness/rank/trainer.h"

#include <numeric>
#include <optional>

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "backends/injected_delay.h"
#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/rank_progress.h"
#include "harness/common/shuffle.h"
#include "harness/rank/training_parts.h"
#include "schemes/registry.h"

namespace harness {

DataParallelTrainer::DataParallelTrainer(Workload& workload, GradientSync& backend,
                                         const Communicator& communicator,
                                         const PointSettings& settings)
    : workload_(workload),
      communicator_(communicator),
      settings_(settings),
      layout_(worker_layout(settings, communicator.rank(), communicator.size())),
      parameters_(exchangeable_parameters(workload, "trainer", false)),
      buckets_(parameters_, backend, settings.bucket_mb, settings.overlap, layout_.workers,
               staging_chunk_floats(settings)) {
  if (settings.scheme == "local_sgd") {
    averaging_ = std::make_unique<ModelAveraging>(parameters_, backend, settings.bucket_mb, layout_.index >= 0,
                                                  layout_.workers, staging_chunk_floats(settings),
                                                  sync_every(settings));
  } else if (settings.scheme != kDefaultScheme) {
    throw NotSupported(fmt::format("scheme: the data-parallel trainer runs \"sync\" and \"local_sgd\", not \"{}\"",
                                   settings.scheme));
  }
}

void DataParallelTrainer::broadcast_parameters() { broadcast_from_rank_zero(parameters_, communicator_); }

void DataParallelTrainer::share_buffers_with_an_evaluating_server() {
  // Rank 0 evaluates. When it only serves, it never ran a forward pass: its BatchNorm statistics
  // are the initial ones, and the held-out loss would be another model's. It takes the first
  // training rank's. Only rank 0 may serve (WorkerLayout), so that is rank 1.
  if (communicator_.size() < 2 || worker_layout(settings_, 0, communicator_.size()).index >= 0) return;
  constexpr int first_training = 1;
  share_buffers_with_rank_zero(workload_, communicator_, first_training);
}

int64_t DataParallelTrainer::steps_per_epoch() const {
  return workload_.train_size() / global_batch(settings_, layout_.workers);
}

// A traced step's parts on the training track; the reductions added theirs as they ran.
void DataParallelTrainer::trace_step(Clock::time_point start, Clock::time_point computed, Clock::time_point reduced,
                                     Clock::time_point end) {
  timeline_->add(Track::kTraining, "step", start, end);
  if (layout_.index >= 0) {  // a serving-only rank neither computes nor calls backward
    const Clock::time_point backward = workload_.backward_started();
    if (backward >= start && backward <= computed) {
      timeline_->add(Track::kTraining, "forward", start, backward);
      timeline_->add(Track::kTraining, "backward", backward, computed);
    } else {
      timeline_->add(Track::kTraining, "forward and backward", start, computed);
    }
  }
  timeline_->add(Track::kTraining, "exposed communication", computed, reduced);
  timeline_->add(Track::kTraining, "optimizer", reduced, end);
  timeline_->end_step();
}

// What train() carries from step to step and from epoch to epoch.
struct DataParallelTrainer::TrainingRun {
  LoopResult result;
  LoopFlush* flush = nullptr;
  int64_t batch = 0;             // samples per worker and step
  int64_t samples_per_step = 0;  // over all workers
  // The first steps of the first epoch train like any other but are not timed: allocators,
  // caches and connections warm up there (validation keeps them within the first epoch).
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  int64_t samples_seen = 0;
  std::vector<int64_t> permutation;
  std::optional<LossWindows> losses;  // the epochs' losses and the loss curve, every loss_every steps
  Clock::time_point last_progress_line;
};

LoopResult DataParallelTrainer::train(LoopFlush* flush) {
  TrainingRun run;
  start_training(flush, run);
  for (int epoch = 1; epoch <= settings_.epochs; ++epoch) train_epoch(epoch, run);
  return std::move(run.result);
}

void DataParallelTrainer::start_training(LoopFlush* flush, TrainingRun& run) {
  LoopResult& result = run.result;
  run.flush = flush;
  result.steps_per_epoch = steps_per_epoch();
  if (result.steps_per_epoch == 0) {
    throw ConfigError(fmt::format(
        "batch_size: the global batch of {} exceeds the {} training samples",
        global_batch(settings_, layout_.workers), workload_.train_size()));
  }
  run.batch = per_rank_batch(settings_, layout_.workers);
  run.samples_per_step = run.batch * layout_.workers;
  run.permutation.resize(static_cast<std::size_t>(workload_.train_size()));
  // Validation refuses it before launch; a worker started by hand would record no timed step.
  if (settings_.warmup_steps >= result.steps_per_epoch) {
    throw ConfigError(fmt::format("warmup_steps: expected fewer warm-up steps than the {} steps of the first epoch, "
                                  "got {}",
                                  result.steps_per_epoch, settings_.warmup_steps));
  }
  run.warmup_steps = settings_.warmup_steps;

  const auto timed_steps =
      static_cast<std::size_t>(result.steps_per_epoch * settings_.epochs - run.warmup_steps);
  run.total_steps = result.steps_per_epoch * settings_.epochs;
  run.losses.emplace(loss_window_steps(settings_, run.total_steps), run.total_steps, run.samples_per_step);
  for (auto* times : {&result.steps.compute_s, &result.steps.comm_s, &result.steps.exposed_s,
                      &result.steps.step_s}) {
    times->reserve(timed_steps);  // no reallocation inside the timed loop
  }
  if (timeline_ != nullptr) timeline_->trace(communicator_.size(), static_cast<int64_t>(timed_steps));
  run.last_progress_line = Clock::now();
}

void DataParallelTrainer::epoch_barrier() const {
  const InHarnessCollective marked;
  check_mpi(MPI_Barrier(communicator_.handle()), "MPI_Barrier");
}

void DataParallelTrainer::train_epoch(int epoch, TrainingRun& run) {
  LoopResult& result = run.result;
  std::iota(run.permutation.begin(), run.permutation.end(), 0);
  deterministic_shuffle(run.permutation, static_cast<uint64_t>(settings_.seed),
                        static_cast<uint64_t>(epoch));

  const int64_t untimed = epoch == 1 ? run.warmup_steps : 0;
  epoch_barrier();
  double epoch_start = MPI_Wtime();
  // The ranks leave the barrier together: the timeline's clocks start aligned.
  if (epoch == 1 && timeline_ != nullptr) timeline_->start_clock();
  double flushed_s = 0;  // this epoch's flushes: not training time
  for (int64_t step = 0; step < result.steps_per_epoch; ++step) {
    if (step == untimed && untimed > 0) {
      // Between steps no reduction is in flight, so the barrier is safe with overlap too.
      epoch_barrier();
      epoch_start = MPI_Wtime();
      flushed_s = 0;
    }
    // Before the step rather than after it: at an epoch's first step the previous epoch's
    // record (written after its last step) is then part of what is flushed.
    flushed_s += flush_if_due(run.flush, result);
    train_step(epoch, step, untimed, run);
  }
  epoch_barrier();
  const double epoch_time = MPI_Wtime() - epoch_start - flushed_s;
  result.train_time_s += epoch_time;
  result.samples_trained += (result.steps_per_epoch - untimed) * run.samples_per_step;
  run.samples_seen += result.steps_per_epoch * run.samples_per_step;

  const double loss_sum = run.losses->end_epoch(communicator_, layout_.workers, run.result.loss_curve);
  share_buffers_with_an_evaluating_server();
  if (communicator_.rank() == 0) record_epoch(epoch, loss_sum, epoch_time, run);
}

// One SGD step; a timed one (past the warm-up) adds its times to the result.
void DataParallelTrainer::train_step(int epoch, int64_t step, int64_t untimed, TrainingRun& run) {
  LoopResult& result = run.result;
  const int64_t timed_index = step < untimed ? -1 : static_cast<int64_t>(result.steps.step_s.size());
  const bool traced = timeline_ != nullptr && timeline_->traces_step(timed_index);
  if (traced) timeline_->begin_step(timed_index);
  const auto start = Clock::now();
  buckets_.zero_gradients();
  const bool local = averaging_ != nullptr;
  if (!local) begin_step();
  if (layout_.index >= 0) {  // a serving-only rank contributes zero gradients
    const std::span<const int64_t> positions(
        run.permutation.data() + (step * layout_.workers + layout_.index) * run.batch,
        static_cast<std::size_t>(run.batch));
    run.losses->add(workload_.forward_backward(positions));
  }
  inject_compute_delay(communicator_.rank(), settings_.inject_compute_delay_rank, settings_.inject_compute_delay_ms);
  // The same rate on every rank: a function of the settings and the step alone.
  const double epochs_done = (epoch - 1) + static_cast<double>(step) / result.steps_per_epoch;
  const auto lr = static_cast<float>(learning_rate(settings_, layout_.workers, epochs_done));
  if (local) {
    // Local SGD: the rank's own update is compute; averaging the models, every sync_every steps
    // and at the epoch's last step (rank 0 evaluates the ranks' mean model), is the step's
    // communication. Its optimizer phase is empty.
    torch::NoGradGuard no_grad;
    sgd_update(parameters_, lr);
  }
  const auto computed = Clock::now();

  BucketTiming communication;
  if (!local) {
    communication = average_gradients();
  } else {
    averaging_->after_step(step + 1 == result.steps_per_epoch);
  }
  const auto reduced = Clock::now();

  if (!local) {
    torch::NoGradGuard no_grad;
    sgd_update(parameters_, lr);
  }
  const auto end = Clock::now();
  if (traced) trace_step(start, computed, reduced, end);
  run.losses->end_step();
  if (step < untimed) return;
  result.steps.compute_s.push_back(seconds_between(start, computed) + seconds_between(reduced, end));
  const double exposed_s = seconds_between(computed, reduced);
  result.steps.comm_s.push_back(communication.overlapped_comm_s.value_or(exposed_s));
  result.steps.exposed_s.push_back(exposed_s);
  result.steps.step_s.push_back(seconds_between(start, end));
}

// Rank 0: evaluates the model and records the epoch.
void DataParallelTrainer::record_epoch(int epoch, double loss_sum, double epoch_time, TrainingRun& run) {
  const double train_loss = loss_sum / static_cast<double>(run.result.steps_per_epoch * layout_.workers);
  record_evaluated_epoch(workload_, {epoch, settings_.epochs, train_loss, epoch_time, run.samples_seen}, run.result,
                         run.last_progress_line);
}

// On the CPU, where a parameter and its gradient share a layout (in training always, unless a
// workload replaced a .grad), the update is a loop over their memory: a small network's update is
// a few hundred floats, and one dispatched sub_ per parameter cost more than the blas Iris
// network's whole forward and backward pass. Anywhere else, sub_.
void sgd_update(std::vector<torch::Tensor>& parameters, float lr) {
  for (auto& parameter : parameters) {
    const torch::Tensor& gradient = parameter.grad();
    // Two dense tensors of one shape with equal strides: element k of one's memory is element k
    // of the other's, whatever the memory format.
    const bool same_dense_layout =
        parameter.is_non_overlapping_and_dense() && gradient.is_non_overlapping_and_dense() &&
        gradient.sizes() == parameter.sizes() && gradient.strides() == parameter.strides();
    if (parameter.is_cpu() && gradient.is_cpu() && parameter.scalar_type() == torch::kFloat32 &&
        gradient.scalar_type() == torch::kFloat32 && same_dense_layout) {
      float* values = parameter.data_ptr<float>();
      const float* steps = gradient.data_ptr<float>();
      // Large tensors (a CNN's fc1, ResNet's convolutions) on the rank's intra-op threads, as
      // sub_ would; below the grain size this runs inline.
      at::parallel_for(0, parameter.numel(), at::internal::GRAIN_SIZE,
                       [&](int64_t begin, int64_t end) {
                         for (int64_t i = begin; i < end; ++i) values[i] -= lr * steps[i];
                       });
      // As an in-place op would: a graph that still holds the parameter then fails loudly.
      parameter.unsafeGetTensorImpl()->bump_version();
    } else {
      parameter.sub_(gradient, lr);
    }
  }
}

}  // namespace harness
