#include "harness/rank/pipeline.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "backends/injected_delay.h"
#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/rank_progress.h"
#include "harness/common/shuffle.h"
#include "harness/rank/polling_wait.h"
#include "harness/rank/trainer.h"
#include "harness/rank/training_parts.h"
#include "schemes/registry.h"

namespace harness {
namespace {

// Tags name the micro-batch and the direction, so that a message can only meet the receive posted
// for it. Modulo a bound within the 32767 every MPI allows: beyond it the schedules' micro-batch
// order (each direction's sends and receives in micro-batch order) keeps them apart, as MPI does
// not let messages of one tag overtake each other.
constexpr int kTagMicroBatches = 16000;
int activation_tag(int micro_batch) { return 2 * (micro_batch % kTagMicroBatches); }      // stage s to s+1
int gradient_tag(int micro_batch) { return 2 * (micro_batch % kTagMicroBatches) + 1; }   // stage s+1 to s
constexpr int kModelTag = 2 * kTagMicroBatches;  // a stage's tensors to rank 0 for evaluation

LayerChain& chain_of(Workload& workload) {
  LayerChain* chain = workload.layer_chain();
  if (chain == nullptr) throw NotSupported("scheme pipeline: the workload's network is not a chain of layers");
  return *chain;
}

// The tensors of layers [first, end), their BatchNorm statistics included, copied, so that the
// forward passes made before training (timing, shapes) leave the model as it was.
std::vector<torch::Tensor> saved_buffers(LayerChain& chain, int first, int end) {
  std::vector<torch::Tensor> saved;
  for (int layer = first; layer < end; ++layer) {
    for (const auto& buffer : chain.layer_buffers(layer)) saved.push_back(buffer.clone());
  }
  return saved;
}

void restore_buffers(LayerChain& chain, int first, int end, const std::vector<torch::Tensor>& saved) {
  torch::NoGradGuard no_grad;
  std::size_t next = 0;
  for (int layer = first; layer < end; ++layer) {
    for (auto& buffer : chain.layer_buffers(layer)) buffer.copy_(saved[next++]);
  }
}

std::vector<int64_t> first_positions(int64_t count) {
  std::vector<int64_t> positions(static_cast<std::size_t>(count));
  std::iota(positions.begin(), positions.end(), 0);
  return positions;
}

}  // namespace

// What a step holds per micro-batch between its forward and its backward pass.
struct PipelineScheme::InFlight {
  explicit InFlight(int micro_batches)
      : received(micro_batches),
        inputs(micro_batches),
        outputs(micro_batches),
        losses(micro_batches),
        sent_outputs(micro_batches),
        output_gradients(micro_batches),
        sent_gradients(micro_batches),
        activation_receives(micro_batches, MPI_REQUEST_NULL),
        gradient_receives(micro_batches, MPI_REQUEST_NULL),
        output_sends(micro_batches, MPI_REQUEST_NULL),
        gradient_sends(micro_batches, MPI_REQUEST_NULL) {}
  std::vector<torch::Tensor> received;          // host buffers the activations' receives write
  std::vector<torch::Tensor> inputs;            // received (a leaf whose .grad goes back), or stage 0's batch
  std::vector<torch::Tensor> outputs;           // the stage's output (not on the last stage)
  std::vector<torch::Tensor> losses;            // the last stage's, scaled by 1/m
  std::vector<torch::Tensor> sent_outputs;      // what the output send reads, until it completes
  std::vector<torch::Tensor> output_gradients;  // received from the next stage (host memory)
  std::vector<torch::Tensor> sent_gradients;    // what the input-gradient send reads
  std::vector<MPI_Request> activation_receives, gradient_receives, output_sends, gradient_sends;
  int held = 0;
};

struct PipelineScheme::Run {
  LoopResult result;
  LoopFlush* flush = nullptr;
  int64_t batch = 0;             // samples per replica and step
  int64_t micro = 0;             // samples per micro-batch
  int64_t samples_per_step = 0;  // over all replicas
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;
  int64_t samples_seen = 0;
  std::vector<int64_t> permutation;
  std::optional<LossWindows> losses;  // the last stage's; the others add none
  Clock::time_point last_progress_line;
  // Memory, in bytes above the step's start: the most held after a forward pass (activations kept
  // for backward, received and sent tensors) and the allocator's peak (backward's transients too).
  int64_t bytes_at_start = 0;
  int64_t held_peak = 0;
  std::vector<int64_t> held_peaks;  // per timed step
  std::vector<int64_t> step_peaks;
  // The step being run.
  std::span<const int64_t> positions;  // this replica's batch
  bool traced = false;
  double forward_s = 0, backward_s = 0, receive_wait_s = 0, send_wait_s = 0;
};

PipelineScheme::PipelineScheme(Workload& workload, const Communicator& communicator, const PointSettings& settings,
                               const BackendMaker& make_backend)
    : workload_(workload),
      chain_(chain_of(workload)),
      communicator_(communicator),
      settings_(settings),
      stages_(pipeline_stages(settings)),
      replicas_(std::max(1, communicator.size() / std::max(1, stages_))),
      stage_(communicator.rank() / replicas_),
      replica_(communicator.rank() % replicas_),
      micro_batches_(micro_batches(settings)),
      device_(workload.parameters().empty() ? torch::kCPU : workload.parameters().front().device()),
      memory_(device_) {
  if (stages_ < 1 || communicator.size() % stages_ != 0 || stages_ > chain_.layer_count()) {
    throw ConfigError(fmt::format("pipeline_stages: expected a divisor of the {} ranks and at most the {} layers, got {}",
                                  communicator.size(), chain_.layer_count(), stages_));
  }
  ops_ = stage_schedule(pipeline_schedule(settings), stage_, stages_, micro_batches_);
  check_mpi(MPI_Comm_dup(communicator.handle(), transfers_.target()), "MPI_Comm_dup");
  check_mpi(MPI_Comm_split(communicator.handle(), stage_, replica_, replicas_comm_.target()), "MPI_Comm_split");
  if (const auto given = stage_boundaries(settings)) {
    boundaries_ = *given;
  } else {
    measure_and_cut();
  }
  first_layer_ = stage_ == 0 ? 0 : boundaries_[static_cast<std::size_t>(stage_ - 1)];
  end_layer_ = stage_ + 1 == stages_ ? chain_.layer_count() : boundaries_[static_cast<std::size_t>(stage_)];
  for (int layer = first_layer_; layer < end_layer_; ++layer) {
    for (auto& parameter : chain_.layer_parameters(layer)) {
      if (parameter.scalar_type() != torch::kFloat32 || !parameter.is_non_overlapping_and_dense()) {
        throw NotSupported("scheme pipeline: parameters must be dense float32 tensors");
      }
      parameter.mutable_grad() = torch::zeros_like(parameter, torch::MemoryFormat::Preserve);
      parameters_.push_back(parameter);
    }
  }
  if (replicas_ > 1) {
    replica_group_ = std::make_unique<Communicator>(replicas_comm_.get());
    backend_ = make_backend(*replica_group_);
    buckets_ = std::make_unique<GradientBuckets>(parameters_, *backend_, settings.bucket_mb, /*overlap=*/false,
                                                 replicas_, staging_chunk_floats(settings));
  }
  learn_cut_layouts();
}

PipelineScheme::~PipelineScheme() = default;

// Rank 0 times every layer's forward and backward pass on one micro-batch and cuts the chain;
// every rank takes its cuts (collective).
void PipelineScheme::measure_and_cut() {
  const int layers = chain_.layer_count();
  boundaries_.assign(static_cast<std::size_t>(stages_ - 1), 0);
  if (communicator_.rank() == 0) {
    const int64_t micro = per_rank_batch(settings_, replicas_) / micro_batches_;
    const std::vector<int64_t> positions = first_positions(std::min(micro, workload_.train_size()));
    const std::vector<torch::Tensor> saved = saved_buffers(chain_, 0, layers);
    layer_times_s_.assign(static_cast<std::size_t>(layers), std::numeric_limits<double>::infinity());
    constexpr int kRepeats = 4;  // the first warms the allocator and oneDNN's kernels up
    for (int repeat = 0; repeat < kRepeats; ++repeat) {
      std::vector<torch::Tensor> inputs(static_cast<std::size_t>(layers));
      std::vector<torch::Tensor> outputs(static_cast<std::size_t>(layers));
      std::vector<double> times(static_cast<std::size_t>(layers), 0);
      torch::Tensor x = chain_.chain_input(positions);
      for (int l = 0; l < layers; ++l) {
        inputs[l] = l == 0 ? x : outputs[l - 1].detach().requires_grad_(true);
        const auto start = Clock::now();
        outputs[l] = chain_.forward_layer(l, inputs[l]);
        finish_queued_work(device_);
        times[l] += seconds_since(start);
      }
      auto start = Clock::now();
      chain_.chain_loss(outputs[layers - 1], positions).backward();
      finish_queued_work(device_);
      times[layers - 1] += seconds_since(start);
      for (int l = layers - 2; l >= 0; --l) {
        start = Clock::now();
        outputs[l].backward(inputs[l + 1].grad());
        finish_queued_work(device_);
        times[l] += seconds_since(start);
      }
      if (repeat == 0) continue;
      for (int l = 0; l < layers; ++l) layer_times_s_[l] = std::min(layer_times_s_[l], times[l]);
    }
    restore_buffers(chain_, 0, layers, saved);
    for (auto& parameter : workload_.parameters()) {
      if (parameter.grad().defined()) parameter.mutable_grad().zero_();
    }
    boundaries_ = balanced_boundaries(layer_times_s_, stages_);
  }
  balanced_ = true;
  if (stages_ > 1) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(boundaries_.data(), stages_ - 1, MPI_INT, 0, communicator_.handle(), &request),
              "MPI_Ibcast(stage boundaries)");
    const InHarnessCollective marked;
    wait_polling(request);
  }
}

// The shapes and memory layouts at this stage's cuts, from one forward pass without autograd.
void PipelineScheme::learn_cut_layouts() {
  const int64_t micro = per_rank_batch(settings_, replicas_) / micro_batches_;
  const std::vector<int64_t> positions = first_positions(std::min(micro, workload_.train_size()));
  const std::vector<torch::Tensor> saved = saved_buffers(chain_, 0, end_layer_);
  {
    torch::NoGradGuard no_grad;
    torch::Tensor x = chain_.chain_input(positions);
    for (int layer = 0; layer < end_layer_; ++layer) {
      if (layer == first_layer_ && stage_ > 0) input_link_ = StageLink(x, device_);
      x = chain_.forward_layer(layer, x);
    }
    if (stage_ + 1 < stages_) output_link_ = StageLink(x, device_);
  }
  restore_buffers(chain_, 0, end_layer_, saved);
}

void PipelineScheme::broadcast_parameters() {
  std::vector<torch::Tensor> all = workload_.parameters();
  broadcast_from_rank_zero(all, communicator_);
}

torch::Tensor PipelineScheme::run_layers(torch::Tensor x) {
  for (int layer = first_layer_; layer < end_layer_; ++layer) x = chain_.forward_layer(layer, x);
  return x;
}

void PipelineScheme::wait_for(MPI_Request& request, double& waited_s, std::string_view what, int micro_batch) {
  if (request == MPI_REQUEST_NULL) return;
  const auto start = Clock::now();
  {
    const InHarnessCollective marked;  // a stage that hangs is named apart from those waiting for it
    wait_polling(request);
  }
  const auto end = Clock::now();
  waited_s += seconds_between(start, end);
  if (timeline_ != nullptr && timeline_->active()) {
    timeline_->add(Track::kTraining, fmt::format("wait: {} {}", what, micro_batch), start, end);
  }
}

void PipelineScheme::forward(int k, std::span<const int64_t> positions, Run& run, InFlight& held) {
  const auto u = static_cast<std::size_t>(k);
  const std::span<const int64_t> micro = positions.subspan(u * static_cast<std::size_t>(run.micro),
                                                           static_cast<std::size_t>(run.micro));
  torch::Tensor input;
  if (stage_ > 0) {
    wait_for(held.activation_receives[u], run.receive_wait_s, "activations", k);
    if (k + 1 < micro_batches_) {  // the next one's transfer proceeds while this one computes
      held.received[u + 1] = input_link_.host_buffer();
      check_mpi(MPI_Irecv(held.received[u + 1].data_ptr(), static_cast<int>(input_link_.bytes()), MPI_BYTE,
                          communicator_.rank() - replicas_, activation_tag(k + 1), transfers_.get(),
                          &held.activation_receives[u + 1]),
                "MPI_Irecv(activations)");
    }
  }
  if (stage_ == 0) {
    input = chain_.chain_input(micro);
    held.inputs[u] = input;
  }
  // The pass: on a GPU, from the copy of what was received to the copy of what is sent.
  const auto start = Clock::now();
  if (stage_ > 0) {
    held.inputs[u] = input_link_.to_device(held.received[u]).requires_grad_(true);
    held.received[u] = torch::Tensor();
    input = held.inputs[u];
  }
  torch::Tensor output = run_layers(input);
  if (stage_ + 1 == stages_) {
    held.losses[u] = chain_.chain_loss(output, micro) / static_cast<double>(micro_batches_);
    run.losses->add(held.losses[u].item<double>());
  } else {
    held.outputs[u] = output;
    held.sent_outputs[u] = output_link_.to_host(output.detach());
    check_mpi(MPI_Isend(held.sent_outputs[u].data_ptr(), static_cast<int>(output_link_.bytes()), MPI_BYTE,
                        communicator_.rank() + replicas_, activation_tag(k), transfers_.get(), &held.output_sends[u]),
              "MPI_Isend(activations)");
    held.output_gradients[u] = output_link_.host_buffer();
    check_mpi(MPI_Irecv(held.output_gradients[u].data_ptr(), static_cast<int>(output_link_.bytes()), MPI_BYTE,
                        communicator_.rank() + replicas_, gradient_tag(k), transfers_.get(), &held.gradient_receives[u]),
              "MPI_Irecv(gradients)");
  }
  finish_queued_work(device_);
  const auto end = Clock::now();
  run.forward_s += seconds_between(start, end);
  if (run.traced) timeline_->add(Track::kTraining, fmt::format("forward {}", k), start, end);
  run.result.pipeline.most_held = std::max(run.result.pipeline.most_held, ++held.held);
  run.held_peak = std::max(run.held_peak, memory_.in_use() - run.bytes_at_start);
}

void PipelineScheme::backward(int k, Run& run, InFlight& held) {
  const auto u = static_cast<std::size_t>(k);
  if (stage_ + 1 < stages_) wait_for(held.gradient_receives[u], run.receive_wait_s, "gradients", k);
  const auto start = Clock::now();
  if (stage_ + 1 == stages_) {
    held.losses[u].backward();
  } else {
    held.outputs[u].backward(output_link_.to_device(held.output_gradients[u]));
  }
  if (stage_ > 0) {
    held.sent_gradients[u] = input_link_.to_host(held.inputs[u].grad());
    check_mpi(MPI_Isend(held.sent_gradients[u].data_ptr(), static_cast<int>(input_link_.bytes()), MPI_BYTE,
                        communicator_.rank() - replicas_, gradient_tag(k), transfers_.get(), &held.gradient_sends[u]),
              "MPI_Isend(gradients)");
  }
  finish_queued_work(device_);
  const auto end = Clock::now();
  run.backward_s += seconds_between(start, end);
  if (run.traced) timeline_->add(Track::kTraining, fmt::format("backward {}", k), start, end);
  // The micro-batch's activations go; what its sends read stays until they complete.
  wait_for(held.output_sends[u], run.send_wait_s, "send", k);
  held.sent_outputs[u] = torch::Tensor();
  held.outputs[u] = torch::Tensor();
  held.output_gradients[u] = torch::Tensor();
  held.losses[u] = torch::Tensor();
  held.inputs[u] = torch::Tensor();
  --held.held;
}

LoopResult PipelineScheme::train(LoopFlush* flush) {
  Run run;
  LoopResult& result = run.result;
  run.flush = flush;
  run.batch = per_rank_batch(settings_, replicas_);
  run.micro = run.batch / micro_batches_;
  run.samples_per_step = run.batch * replicas_;
  result.steps_per_epoch = workload_.train_size() / run.samples_per_step;
  if (result.steps_per_epoch == 0 || settings_.warmup_steps >= result.steps_per_epoch) {
    throw ConfigError(fmt::format("batch_size: the global batch of {} leaves {} steps per epoch, and {} warm-up steps",
                                  run.samples_per_step, result.steps_per_epoch, settings_.warmup_steps));
  }
  run.warmup_steps = settings_.warmup_steps;
  run.total_steps = result.steps_per_epoch * settings_.epochs;
  run.losses.emplace(loss_window_steps(settings_, run.total_steps), run.total_steps, run.samples_per_step);
  run.permutation.resize(static_cast<std::size_t>(workload_.train_size()));
  const auto timed_steps = static_cast<std::size_t>(run.total_steps - run.warmup_steps);
  run.step_peaks.reserve(timed_steps);
  run.held_peaks.reserve(timed_steps);
  for (auto* times : {&result.steps.compute_s, &result.steps.comm_s, &result.steps.exposed_s, &result.steps.step_s}) {
    times->reserve(timed_steps);
  }
  if (timeline_ != nullptr) timeline_->trace(communicator_.size(), static_cast<int64_t>(timed_steps));
  run.last_progress_line = Clock::now();
  for (int epoch = 1; epoch <= settings_.epochs; ++epoch) train_epoch(epoch, run);
  // The median step's: a step that allocates once for good (a kernel's cached scratch memory) would
  // otherwise set them.
  const auto median = [](std::vector<int64_t>& values) {
    if (values.empty()) return int64_t{0};
    auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
  };
  result.pipeline.peak_activation_bytes = median(run.held_peaks);
  result.pipeline.peak_step_bytes = median(run.step_peaks);
  return std::move(run.result);
}

void PipelineScheme::train_epoch(int epoch, Run& run) {
  LoopResult& result = run.result;
  std::iota(run.permutation.begin(), run.permutation.end(), 0);
  deterministic_shuffle(run.permutation, static_cast<uint64_t>(settings_.seed), static_cast<uint64_t>(epoch));
  const int64_t untimed = epoch == 1 ? run.warmup_steps : 0;
  barrier_polling(communicator_);
  double epoch_start = MPI_Wtime();
  if (epoch == 1 && timeline_ != nullptr) timeline_->start_clock();
  double flushed_s = 0;
  for (int64_t step = 0; step < result.steps_per_epoch; ++step) {
    if (step == untimed && untimed > 0) {
      barrier_polling(communicator_);
      epoch_start = MPI_Wtime();
      flushed_s = 0;
    }
    flushed_s += flush_if_due(run.flush, result);
    train_step(epoch, step, step >= untimed, run);
  }
  barrier_polling(communicator_);
  const double epoch_time = MPI_Wtime() - epoch_start - flushed_s;
  result.train_time_s += epoch_time;
  result.samples_trained += (result.steps_per_epoch - untimed) * run.samples_per_step;
  run.samples_seen += result.steps_per_epoch * run.samples_per_step;

  // The last stages' losses (the others add none), summed as the trainer sums its ranks'.
  const double loss_sum = run.losses->end_epoch(communicator_, replicas_, result.loss_curve);
  gather_model_on_rank_zero();
  if (communicator_.rank() == 0) {
    const double train_loss = loss_sum / static_cast<double>(result.steps_per_epoch * replicas_);
    record_evaluated_epoch(workload_, {epoch, settings_.epochs, train_loss, epoch_time, run.samples_seen}, result,
                           run.last_progress_line);
  }
}

void PipelineScheme::train_step(int epoch, int64_t step, bool timed, Run& run) {
  LoopResult& result = run.result;
  const int64_t timed_index = timed ? static_cast<int64_t>(result.steps.step_s.size()) : -1;
  run.traced = timeline_ != nullptr && timeline_->traces_step(timed_index);
  if (run.traced) timeline_->begin_step(timed_index);
  run.forward_s = run.backward_s = run.receive_wait_s = run.send_wait_s = 0;
  const auto start = Clock::now();
  if (buckets_) {
    buckets_->zero_gradients();
  } else {
    for (auto& parameter : parameters_) parameter.mutable_grad().zero_();
  }
  run.bytes_at_start = memory_.in_use();
  run.held_peak = 0;
  memory_.reset_peak();

  const std::span<const int64_t> positions(run.permutation.data() + (step * replicas_ + replica_) * run.batch,
                                           static_cast<std::size_t>(run.batch));
  InFlight held(micro_batches_);
  if (stage_ > 0) {
    held.received[0] = input_link_.host_buffer();
    check_mpi(MPI_Irecv(held.received[0].data_ptr(), static_cast<int>(input_link_.bytes()), MPI_BYTE,
                        communicator_.rank() - replicas_, activation_tag(0), transfers_.get(), &held.activation_receives[0]),
              "MPI_Irecv(activations)");
  }
  for (const PipelineOp& op : ops_) {
    if (op.pass == PipelineOp::Pass::kForward) {
      forward(op.micro_batch, positions, run, held);
    } else {
      backward(op.micro_batch, run, held);
    }
  }
  for (int k = 0; k < micro_batches_; ++k) wait_for(held.gradient_sends[static_cast<std::size_t>(k)], run.send_wait_s, "send", k);
  const int64_t peak_bytes = memory_.peak() - run.bytes_at_start;
  inject_compute_delay(communicator_.rank(), settings_.inject_compute_delay_rank, settings_.inject_compute_delay_ms);

  const auto computed = Clock::now();
  if (buckets_) buckets_->finish_step();
  const auto averaged = Clock::now();
  if (run.traced && buckets_) timeline_->add(Track::kTraining, "average gradients", computed, averaged);
  const double epochs_done = (epoch - 1) + static_cast<double>(step) / static_cast<double>(result.steps_per_epoch);
  {
    torch::NoGradGuard no_grad;
    sgd_update(parameters_, static_cast<float>(learning_rate(settings_, replicas_, epochs_done)));
  }
  finish_queued_work(device_);  // the update's kernels are this step's, not the next forward's
  const auto end = Clock::now();
  if (run.traced) {
    timeline_->add(Track::kTraining, "optimizer", averaged, end);
    timeline_->add(Track::kTraining, "step", start, end);
    timeline_->end_step();
  }

  run.losses->end_step();
  if (!timed) return;
  const double step_s = seconds_between(start, end);
  const double average_s = seconds_between(computed, averaged);
  const double waited_s = run.receive_wait_s + run.send_wait_s + average_s;
  result.steps.step_s.push_back(step_s);
  result.steps.compute_s.push_back(step_s - waited_s);
  result.steps.comm_s.push_back(waited_s);
  result.steps.exposed_s.push_back(waited_s);
  PipelineCounters& counters = result.pipeline;
  counters.forward_s += run.forward_s;
  counters.backward_s += run.backward_s;
  counters.receive_wait_s += run.receive_wait_s;
  counters.send_wait_s += run.send_wait_s;
  counters.average_s += average_s;
  run.step_peaks.push_back(peak_bytes);
  run.held_peaks.push_back(run.held_peak);
}

std::vector<torch::Tensor> PipelineScheme::stage_tensors(int stage) {
  const int first = stage == 0 ? 0 : boundaries_[static_cast<std::size_t>(stage - 1)];
  const int end = stage + 1 == stages_ ? chain_.layer_count() : boundaries_[static_cast<std::size_t>(stage)];
  std::vector<torch::Tensor> tensors;
  for (int layer = first; layer < end; ++layer) {
    for (auto& parameter : chain_.layer_parameters(layer)) tensors.push_back(parameter);
    for (auto& buffer : chain_.layer_buffers(layer)) tensors.push_back(buffer);
  }
  return tensors;
}

// The first replica of every later stage sends rank 0 its stage (outside the timed steps), through
// host memory.
void PipelineScheme::gather_model_on_rank_zero() {
  torch::NoGradGuard no_grad;
  const int rank = communicator_.rank();
  for (int stage = 1; stage < stages_; ++stage) {
    const int sender = stage * replicas_;
    if (rank != 0 && rank != sender) continue;
    for (auto& tensor : stage_tensors(stage)) {
      torch::Tensor bytes = tensor.to(torch::kCPU).contiguous();
      if (rank == sender) {
        check_mpi(MPI_Send(bytes.data_ptr(), static_cast<int>(bytes.nbytes()), MPI_BYTE, 0, kModelTag, transfers_.get()),
                  "MPI_Send(stage)");
      } else {
        bytes = bytes.clone();
        check_mpi(MPI_Recv(bytes.data_ptr(), static_cast<int>(bytes.nbytes()), MPI_BYTE, sender, kModelTag,
                           transfers_.get(), MPI_STATUS_IGNORE),
                  "MPI_Recv(stage)");
        tensor.copy_(bytes);
      }
    }
  }
}

void PipelineScheme::add_measurements(const LoopResult& result, TrainMeasurements& measurements) {
  constexpr int kValues = 10;
  const auto steps = static_cast<double>(std::max<std::size_t>(1, result.steps.step_s.size()));
  const auto sum = [](const std::vector<double>& values) { return std::accumulate(values.begin(), values.end(), 0.0); };
  const PipelineCounters& counters = result.pipeline;
  const std::array<double, kValues> mine = {sum(result.steps.step_s) / steps,
                                            sum(result.steps.compute_s) / steps,
                                            counters.forward_s / steps,
                                            counters.backward_s / steps,
                                            counters.receive_wait_s / steps,
                                            counters.send_wait_s / steps,
                                            counters.average_s / steps,
                                            static_cast<double>(counters.most_held),
                                            static_cast<double>(counters.peak_activation_bytes),
                                            static_cast<double>(counters.peak_step_bytes)};
  std::vector<double> all(static_cast<std::size_t>(kValues * communicator_.size()));
  {
    const InHarnessCollective marked;
    check_mpi(MPI_Gather(mine.data(), kValues, MPI_DOUBLE, all.data(), kValues, MPI_DOUBLE, 0, communicator_.handle()),
              "MPI_Gather(pipeline)");
  }
  if (communicator_.rank() != 0) return;
  PipelineFacts facts;
  facts.stages = stages_;
  facts.replicas = replicas_;
  facts.micro_batches = micro_batches_;
  facts.schedule = pipeline_schedule(settings_);
  facts.boundaries = boundaries_;
  facts.balanced = balanced_;
  for (int layer = 0; layer < chain_.layer_count(); ++layer) facts.layer_names.push_back(chain_.layer_name(layer));
  facts.layer_times_s = layer_times_s_;
  for (int stage = 0; stage < stages_; ++stage) {
    PipelineStageFacts facts_of_stage;
    facts_of_stage.first_layer = stage == 0 ? 0 : boundaries_[static_cast<std::size_t>(stage - 1)];
    facts_of_stage.end_layer = stage + 1 == stages_ ? chain_.layer_count() : boundaries_[static_cast<std::size_t>(stage)];
    for (int replica = 0; replica < replicas_; ++replica) {
      const double* values = &all[static_cast<std::size_t>((stage * replicas_ + replica) * kValues)];
      const double share = 1.0 / replicas_;
      facts_of_stage.step_s += values[0] * share;
      facts_of_stage.compute_s += values[1] * share;
      facts_of_stage.forward_s += values[2] * share;
      facts_of_stage.backward_s += values[3] * share;
      facts_of_stage.receive_wait_s += values[4] * share;
      facts_of_stage.send_wait_s += values[5] * share;
      facts_of_stage.average_s += values[6] * share;
      facts_of_stage.most_held = std::max(facts_of_stage.most_held, static_cast<int>(values[7]));
      facts_of_stage.peak_activation_bytes =
          std::max(facts_of_stage.peak_activation_bytes, static_cast<int64_t>(values[8]));
      facts_of_stage.peak_step_bytes = std::max(facts_of_stage.peak_step_bytes, static_cast<int64_t>(values[9]));
    }
    facts.stage.push_back(facts_of_stage);
  }
  measurements.pipeline = std::move(facts);
}

}  // namespace harness
