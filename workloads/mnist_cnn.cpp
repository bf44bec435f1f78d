#include "workloads/mnist_cnn.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <utility>

#include "workloads/classification.h"
#include "workloads/mnist_tensors.h"
#include "workloads/workload.h"

namespace harness {
namespace {

// Four layers for the pipeline scheme: conv1, conv2 with its pooling, fc1, fc2.
class MnistCnn final : public TensorClassifier, public LayerChain {
 public:
  MnistCnn(const PointSettings& settings, int cuda_device)
      : TensorClassifier(torch_device(settings.device, cuda_device)) {
    MnistTensors data = load_mnist_tensors(settings);
    train_inputs_ = std::move(data.train_images);
    train_labels_ = std::move(data.train_labels);
    test_inputs_ = std::move(data.test_images);
    test_labels_ = std::move(data.test_labels);

    torch::manual_seed(static_cast<uint64_t>(settings.seed));
    model_ = std::make_shared<torch::nn::Module>();
    conv1_ = model_->register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)));
    conv2_ = model_->register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
    fc1_ = model_->register_module("fc1", torch::nn::Linear(9216, 128));
    fc2_ = model_->register_module("fc2", torch::nn::Linear(128, 10));

    place_on_device();
    store_convolutions_channels_last(model_->parameters());
  }

  double forward_backward(std::span<const int64_t> positions) override {
    const auto loss = chain_loss(forward(chain_input(positions)), positions);
    mark_backward();
    loss.backward();
    return loss.item<double>();
  }

  Evaluation evaluate() override {
    // At most 1000 images at a time bounds the activations' memory.
    return evaluate_classifier([this](const torch::Tensor& x) { return forward(x); }, test_inputs_,
                               test_labels_, 1000);
  }

 LayerChain* layer_chain() override { return this; }
  int layer_count() const override { return 4; }
  std::string layer_name(int layer) const override {
    static constexpr const char* kNames[] = {"conv1", "conv2", "fc1", "fc2"};
    return kNames[layer];
  }
  std::vector<torch::Tensor> layer_parameters(int layer) override {
    switch (layer) {
      case 0: return conv1_->parameters();
      case 1: return conv2_->parameters();
      case 2: return fc1_->parameters();
      default: return fc2_->parameters();
    }
  }
  torch::Tensor chain_input(std::span<const int64_t> positions) override {
    return train_inputs_.index_select(0, position_index(positions, device_));
  }
  torch::Tensor chain_loss(const torch::Tensor& output, std::span<const int64_t> positions) override {
    return torch::nll_loss(output, train_labels_.index_select(0, position_index(positions, device_)));
  }

  // The example's conv → ReLU → conv → ReLU → max-pool, with the last ReLU after the pooling:
  // ReLU is monotonic, so the two commute, and it then touches a quarter of the elements. The
  // convolutions run channels-last (their weights are stored so), and the pooled activations are
  // flattened in that memory order, (h, w, c) rather than (c, h, w): a view, where going back to
  // NCHW would cost a transposing copy forward and another backward (7% of the step). fc1 is
  // randomly initialised, so which of its 9216 inputs is which is only a naming of its columns.
  torch::Tensor forward_layer(int layer, const torch::Tensor& x) override {
    switch (layer) {
      case 0: return torch::relu(conv1_(x));
      case 1: return torch::relu(torch::max_pool2d(conv2_(x), 2).permute({0, 2, 3, 1}).flatten(1));
      case 2: return torch::relu(fc1_(x));
      default: return torch::log_softmax(fc2_(x), 1);
    }
  }

 private:
  torch::Tensor forward(torch::Tensor x) {
    for (int layer = 0; layer < layer_count(); ++layer) x = forward_layer(layer, x);
    return x;
  }

  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

}  // namespace

std::unique_ptr<Workload> make_mnist_cnn(const PointSettings& settings, int cuda_device) {
  return std::make_unique<MnistCnn>(settings, cuda_device);
}

}  // namespace harness
