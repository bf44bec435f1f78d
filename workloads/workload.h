// Workload: what each rank trains. One implementation per file pair in this folder; the
// registry (workloads/registry.h) maps the experiment's "workload" name to its factory.
//
// Contract:
// - A workload owns its model and its data. Every rank builds the same workload from the same
//   settings; parameters() lists the trainable tensors in the same order on every rank.
// - Training samples are addressed by position in [0, train_size()); the trainer decides which
//   positions each rank uses in each step (sharding and shuffling live in the trainer).
// - Single-threaded from the caller's side; LibTorch may use its own intra-op threads.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <span>
#include <vector>

namespace harness {

struct Evaluation {
  double loss = 0;
  double accuracy = 0;  // fraction of correctly classified held-out samples
  int64_t samples = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual int64_t train_size() const = 0;
  virtual int64_t test_size() const = 0;
  virtual std::vector<torch::Tensor> parameters() = 0;
  // Forward and backward pass on the training samples at `positions`. Gradients accumulate into
  // the parameters' .grad() (the trainer zeroes them first). Returns the batch's mean loss.
  virtual double forward_backward(std::span<const int64_t> positions) = 0;
  // Loss and accuracy on the held-out set, without touching gradients.
  virtual Evaluation evaluate() = 0;
};

}  // namespace harness
