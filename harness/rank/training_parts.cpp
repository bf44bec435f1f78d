#include "harness/rank/training_parts.h"

#include <mpi.h>

#include <iostream>
#include <set>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/rank_progress.h"

namespace harness {

std::vector<torch::Tensor> exchangeable_parameters(Workload& workload, std::string_view scheme, bool host_only) {
  std::vector<torch::Tensor> parameters = workload.parameters();
  std::set<const void*> seen;
  for (auto& parameter : parameters) {
    // A tensor listed twice (tied weights) would get two slices of the flat buffers for one .grad.
    if (!seen.insert(parameter.unsafeGetTensorImpl()).second) {
      throw NotSupported(fmt::format("{}: a parameter is listed twice (tied weights are not supported)", scheme));
    }
    // Dense: contiguous in some memory format (channels-last convolution weights included).
    if (parameter.scalar_type() != torch::kFloat32 || !parameter.is_non_overlapping_and_dense()) {
      throw NotSupported(fmt::format("{}: parameters must be dense float32 tensors", scheme));
    }
    if (host_only && !parameter.is_cpu()) {
      throw NotSupported(fmt::format("{}: parameters must be in host memory", scheme));
    }
    // In the parameter's layout, which autograd keeps when it accumulates into it.
    parameter.mutable_grad() = torch::zeros_like(parameter, torch::MemoryFormat::Preserve);
  }
  return parameters;
}

void broadcast_from_rank_zero(std::vector<torch::Tensor>& parameters, const Communicator& communicator) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> host;
  for (const auto& parameter : parameters) host.push_back(parameter.reshape({-1}).to(torch::kCPU));
  torch::Tensor flat = torch::cat(host);
  check_mpi(MPI_Bcast(flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT, 0, communicator.handle()),
            "MPI_Bcast(parameters)");
  int64_t offset = 0;
  for (auto& parameter : parameters) {
    parameter.copy_(flat.narrow(0, offset, parameter.numel()).view_as(parameter));
    offset += parameter.numel();
  }
}

void share_buffers_with_rank_zero(Workload& workload, const Communicator& communicator, int from_rank) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& buffer : workload.buffers()) {
    torch::Tensor host = buffer.to(torch::kCPU).contiguous();
    check_mpi(MPI_Bcast(host.data_ptr(), static_cast<int>(host.nbytes()), MPI_BYTE, from_rank, communicator.handle()),
              "MPI_Bcast(buffers)");
    if (communicator.rank() == 0) buffer.copy_(host);
  }
}

void LossWindows::end_step() {
  ++steps_done_;
  if (++steps_in_window_ == window_steps_ || steps_done_ == total_steps_) {
    closed_losses_.push_back(window_loss_);
    closed_steps_.push_back(steps_in_window_);
    closed_samples_.push_back(steps_done_ * samples_per_step_);
    window_loss_ = 0;
    steps_in_window_ = 0;
  }
}

double LossWindows::end_epoch(const Communicator& communicator, int losses_per_step, std::vector<LossPoint>& curve) {
  closed_losses_.push_back(epoch_loss_);
  {
    const InHarnessCollective marked;  // a rank that hangs is named apart from those waiting here
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, closed_losses_.data(), static_cast<int>(closed_losses_.size()), MPI_DOUBLE,
                            MPI_SUM, communicator.handle()),
              "MPI_Allreduce(loss)");
  }
  const double epoch_loss = closed_losses_.back();
  closed_losses_.pop_back();
  if (communicator.rank() == 0) {
    for (std::size_t w = 0; w < closed_losses_.size(); ++w) {
      curve.push_back({closed_samples_[w], closed_losses_[w] / static_cast<double>(closed_steps_[w] * losses_per_step)});
    }
  }
  closed_losses_.clear();
  closed_steps_.clear();
  closed_samples_.clear();
  epoch_loss_ = 0;
  return epoch_loss;
}

void record_evaluated_epoch(Workload& workload, const EpochTrained& trained, LoopResult& result,
                            Clock::time_point& last_progress_line) {
  const auto evaluation_start = Clock::now();
  const Evaluation evaluation = workload.evaluate();
  const double eval_time_s = seconds_since(evaluation_start);
  result.eval_time_s += eval_time_s;
  EpochRecord record;
  record.epoch = trained.epoch;
  record.train_loss = trained.train_loss;
  record.test_loss = evaluation.loss;
  record.test_accuracy = evaluation.accuracy;
  record.train_time_s = trained.train_time_s;
  record.eval_time_s = eval_time_s;
  record.samples_seen = trained.samples_seen;
  result.epochs.push_back(record);
  if (trained.epoch == trained.epochs || seconds_since(last_progress_line) >= 1.0) {
    last_progress_line = Clock::now();
    std::cerr << fmt::format("harness worker (rank 0) progress: epoch {}/{}: train loss {:.4g}, "
                             "test accuracy {:.4g}, {:.3f} s\n",
                             trained.epoch, trained.epochs, record.train_loss, record.test_accuracy,
                             trained.train_time_s)
              << std::flush;
  }
}

}  // namespace harness
