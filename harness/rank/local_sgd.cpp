#include "harness/rank/local_sgd.h"

namespace harness {
namespace {

std::vector<torch::Tensor> shadows_of(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> shadows;
  for (const auto& parameter : parameters) {
    torch::Tensor shadow = torch::empty_like(parameter, torch::MemoryFormat::Preserve).requires_grad_(true);
    shadow.mutable_grad() = torch::zeros_like(parameter, torch::MemoryFormat::Preserve);
    shadows.push_back(shadow);
  }
  return shadows;
}

}  // namespace

ModelAveraging::ModelAveraging(const std::vector<torch::Tensor>& parameters, GradientSync& backend, double bucket_mb,
                               bool trains, int workers, std::size_t staging_chunk_floats, int sync_every)
    : parameters_(parameters),
      shadows_(shadows_of(parameters)),
      buckets_(shadows_, backend, bucket_mb, /*overlap=*/false, workers, staging_chunk_floats),
      trains_(trains),
      sync_every_(sync_every) {}

void ModelAveraging::after_step(bool last_of_epoch) {
  if (++local_steps_ < sync_every_ && !last_of_epoch) return;
  average();
  local_steps_ = 0;
}

void ModelAveraging::average() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    torch::Tensor& sum = shadows_[i].mutable_grad();
    if (trains_) {
      sum.copy_(parameters_[i]);
    } else {
      sum.zero_();
    }
  }
  buckets_.begin_step();
  buckets_.finish_step();
  for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i].copy_(shadows_[i].grad());
}

}  // namespace harness
