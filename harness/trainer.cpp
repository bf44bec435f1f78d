#include "harness/trainer.h"

#include <numeric>

#include <fmt/format.h>

#include "harness/errors.h"
#include "harness/shuffle.h"

namespace harness {

DataParallelTrainer::DataParallelTrainer(Workload& workload, GradientSync& backend,
                                         MPI_Comm communicator, const PointSettings& settings)
    : workload_(workload),
      backend_(backend),
      communicator_(communicator),
      settings_(settings),
      parameters_(workload.parameters()) {
  check_mpi(MPI_Comm_rank(communicator_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(communicator_, &world_size_), "MPI_Comm_size");
  layout_ = worker_layout(settings_, rank_, world_size_);
  int64_t elements = 0;
  for (auto& parameter : parameters_) {
    if (parameter.scalar_type() != torch::kFloat32 || !parameter.is_contiguous()) {
      throw NotSupported("trainer: parameters must be contiguous float32 tensors");
    }
    elements += parameter.numel();
    // Allocate .grad now, so packing never meets an undefined gradient.
    parameter.mutable_grad() = torch::zeros_like(parameter);
  }
  fused_.resize(static_cast<std::size_t>(elements));
}

namespace {

// Copies tensors (gradients or parameters, contiguous float32) into one flat buffer, in order.
template <typename TensorOf>
void flatten_into(const std::vector<torch::Tensor>& parameters, TensorOf tensor_of, float* out) {
  for (const auto& parameter : parameters) {
    const torch::Tensor& tensor = tensor_of(parameter);
    std::copy_n(tensor.data_ptr<float>(), tensor.numel(), out);
    out += tensor.numel();
  }
}

// The inverse, multiplying by `scale` on the way.
template <typename TensorOf>
void unflatten_from(const float* in, float scale, std::vector<torch::Tensor>& parameters,
                    TensorOf tensor_of) {
  for (auto& parameter : parameters) {
    torch::Tensor tensor = tensor_of(parameter);
    float* out = tensor.data_ptr<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) out[i] = in[i] * scale;
    in += tensor.numel();
  }
}

const auto kGradientOf = [](const torch::Tensor& parameter) -> const torch::Tensor& {
  return parameter.grad();
};
const auto kValueOf = [](const torch::Tensor& parameter) -> const torch::Tensor& {
  return parameter;
};

}  // namespace

void DataParallelTrainer::broadcast_parameters() {
  torch::NoGradGuard no_grad;
  flatten_into(parameters_, kValueOf, fused_.data());
  check_mpi(MPI_Bcast(fused_.data(), static_cast<int>(fused_.size()), MPI_FLOAT, 0, communicator_),
            "MPI_Bcast(parameters)");
  unflatten_from(fused_.data(), 1.0F, parameters_, kValueOf);
}

void DataParallelTrainer::average_gradients() {
  flatten_into(parameters_, kGradientOf, fused_.data());
  backend_.allreduce_sum(fused_);
  unflatten_from(fused_.data(), 1.0F / static_cast<float>(layout_.workers), parameters_,
                 kGradientOf);
}

int64_t DataParallelTrainer::steps_per_epoch() const {
  return workload_.train_size() / (static_cast<int64_t>(layout_.workers) * settings_.batch_size);
}

TrainingResult DataParallelTrainer::train() {
  TrainingResult result;
  result.steps_per_epoch = steps_per_epoch();
  if (result.steps_per_epoch == 0) {
    throw ConfigError(fmt::format(
        "batch_size: training ranks × batch_size = {} × {} exceeds the {} training samples",
        layout_.workers, settings_.batch_size, workload_.train_size()));
  }
  const int64_t batch = settings_.batch_size;
  const int64_t global_batch = batch * layout_.workers;

  std::vector<int64_t> permutation(static_cast<std::size_t>(workload_.train_size()));
  const auto lr = static_cast<float>(settings_.lr);

  for (int epoch = 1; epoch <= settings_.epochs; ++epoch) {
    std::iota(permutation.begin(), permutation.end(), 0);
    deterministic_shuffle(permutation, static_cast<uint64_t>(settings_.seed),
                          static_cast<uint64_t>(epoch));
    double loss_sum = 0;

    check_mpi(MPI_Barrier(communicator_), "MPI_Barrier");
    const double epoch_start = MPI_Wtime();
    for (int64_t step = 0; step < result.steps_per_epoch; ++step) {
      const double start = MPI_Wtime();
      for (auto& parameter : parameters_) parameter.mutable_grad().zero_();
      if (layout_.index >= 0) {  // a serving-only rank contributes zero gradients
        const std::span<const int64_t> positions(
            permutation.data() + (step * layout_.workers + layout_.index) * batch,
            static_cast<std::size_t>(batch));
        loss_sum += workload_.forward_backward(positions);
      }
      const double computed = MPI_Wtime();

      average_gradients();
      const double reduced = MPI_Wtime();

      {
        torch::NoGradGuard no_grad;
        for (auto& parameter : parameters_) parameter.sub_(parameter.grad(), lr);
      }
      const double end = MPI_Wtime();
      result.steps.compute_s.push_back((computed - start) + (end - reduced));
      result.steps.comm_s.push_back(reduced - computed);
      result.steps.step_s.push_back(end - start);
    }
    check_mpi(MPI_Barrier(communicator_), "MPI_Barrier");
    const double epoch_time = MPI_Wtime() - epoch_start;
    result.train_time_s += epoch_time;
    result.samples_trained += result.steps_per_epoch * global_batch;

    // Bookkeeping outside the timed region: the epoch's mean loss over all ranks' batches.
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &loss_sum, 1, MPI_DOUBLE, MPI_SUM, communicator_),
              "MPI_Allreduce(loss)");
    if (rank_ == 0) {
      const Evaluation evaluation = workload_.evaluate();
      EpochRecord record;
      record.epoch = epoch;
      record.train_loss =
          loss_sum / static_cast<double>(result.steps_per_epoch * layout_.workers);
      record.test_loss = evaluation.loss;
      record.test_accuracy = evaluation.accuracy;
      record.train_time_s = epoch_time;
      record.samples_seen = result.samples_trained;
      result.epochs.push_back(record);
    }
  }
  return result;
}

}  // namespace harness
