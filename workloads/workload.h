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
#include <string>
#include <string_view>
#include <vector>

#include "harness/common/clock.h"

namespace harness {

struct Evaluation {
  double loss = 0;
  double accuracy = 0;  // fraction of correctly classified held-out samples
  int64_t samples = 0;
};

// The LibTorch device of the experiment's "device" setting; `cuda_device` is this rank's GPU (the
// rank program picks it from the rank's place on its node, see select_cuda_device in
// backends/device_staging.h). Workloads keep their model and data there; validation has already
// refused "cuda" where LibTorch or the machine lacks it.
inline torch::Device torch_device(std::string_view device, int cuda_device) {
  return device == "cuda" ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cuda_device))
                          : torch::Device(torch::kCPU);
}

// Positions of training samples as an index tensor on `device` (a view of the caller's memory
// on the CPU, a copy elsewhere).
inline torch::Tensor position_index(std::span<const int64_t> positions, torch::Device device) {
  const auto index = torch::from_blob(const_cast<int64_t*>(positions.data()),
                                      {static_cast<int64_t>(positions.size())}, torch::kInt64);
  return device.is_cpu() ? index : index.to(device);
}

// Stores every 4-d parameter (convolution weights) channels-last, in place. oneDNN, which runs
// LibTorch's CPU convolutions, then works in NHWC without reordering weights and activations on
// every call; the function the model computes is unchanged. The parameter tensors stay the
// model's own (set_data swaps their storage, so take raw data pointers only afterwards); their
// memory order changes, and the trainer's buffers follow it.
inline void store_convolutions_channels_last(const std::vector<torch::Tensor>& parameters) {
  for (const auto& parameter : parameters) {
    if (parameter.dim() == 4) {
      // A copy with channels-last strides even where contiguous() would see nothing to do (one
      // input channel): oneDNN picks the layout from the strides.
      parameter.set_data(parameter.to(parameter.options(), /*non_blocking=*/false, /*copy=*/true,
                                      torch::MemoryFormat::ChannelsLast));
    }
  }
}

// A network as a chain of layers, each a function of the one before's output: what the pipeline
// scheme (harness/rank/pipeline.h) splits into stages. Layer l's output is layer l+1's input; the
// chain's composition, with chain_loss at its end, computes exactly what forward_backward does,
// so a pipeline is compared with the whole network on one rank. A "layer" is the unit a stage
// boundary may fall between: a linear or convolution layer with its activation, a residual block.
class LayerChain {
 public:
  virtual ~LayerChain() = default;
  virtual int layer_count() const = 0;
  // For the records and the stage table: "conv1", "layer2.0", "fc".
  virtual std::string layer_name(int layer) const = 0;
  // The trainable tensors of `layer` (each listed by parameters() too) and its other state
  // (BatchNorm's running statistics).
  virtual std::vector<torch::Tensor> layer_parameters(int layer) = 0;
  virtual std::vector<torch::Tensor> layer_buffers(int /*layer*/) { return {}; }
  // Layer 0's input for the training samples at `positions`.
  virtual torch::Tensor chain_input(std::span<const int64_t> positions) = 0;
  // Layer `layer` applied to `x` in training mode.
  virtual torch::Tensor forward_layer(int layer, const torch::Tensor& x) = 0;
  // The mean loss over the samples at `positions` of the last layer's `output` (a scalar that
  // backward() starts from).
  virtual torch::Tensor chain_loss(const torch::Tensor& output, std::span<const int64_t> positions) = 0;
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
  // The state that evaluation reads beside the parameters and that training updates on the ranks
  // that compute (BatchNorm's running statistics); none by default.
  virtual std::vector<torch::Tensor> buffers() { return {}; }
  // The network as a chain of layers (null: it cannot be split into pipeline stages).
  virtual LayerChain* layer_chain() { return nullptr; }

  // When the last forward_backward() began its backward pass: the timeline splits the step there.
  Clock::time_point backward_started() const { return backward_started_; }

 protected:
  // Implementations call this between their forward and backward pass.
  void mark_backward() { backward_started_ = Clock::now(); }

 private:
  Clock::time_point backward_started_;
};

}  // namespace harness
