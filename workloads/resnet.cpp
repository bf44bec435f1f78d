#include "workloads/resnet.h"

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/pooling.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "harness/common/json_values.h"
#include "workloads/classification.h"
#include "workloads/workload.h"

namespace harness {
namespace {

torch::nn::Conv2d convolution(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// One residual block: basic (two 3×3) or bottleneck (1×1 → 3×3 → 1×1, 4× wider output).
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int64_t in, int64_t width, int64_t stride, bool bottleneck)
      : bottleneck_(bottleneck) {
    const int64_t out = bottleneck ? width * 4 : width;
    if (bottleneck) {
      conv1_ = register_module("conv1", convolution(in, width, 1, 1));
      conv2_ = register_module("conv2", convolution(width, width, 3, stride));
      conv3_ = register_module("conv3", convolution(width, out, 1, 1));
      bn3_ = register_module("bn3", torch::nn::BatchNorm2d(out));
    } else {
      conv1_ = register_module("conv1", convolution(in, width, 3, stride));
      conv2_ = register_module("conv2", convolution(width, width, 3, 1));
    }
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(width));
    if (stride != 1 || in != out) {
      downsample_ = register_module(
          "downsample", torch::nn::Sequential(convolution(in, out, 1, stride), torch::nn::BatchNorm2d(out)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    if (bottleneck_) y = bn3_(conv3_(torch::relu(y)));
    return torch::relu(y + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  bool bottleneck_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(ResidualBlock);

class ResNetImpl : public torch::nn::Module {
 public:
  ResNetImpl(int depth, int64_t classes) {
    const bool bottleneck = depth == 50;
    const std::vector<int> blocks = bottleneck ? std::vector<int>{3, 4, 6, 3} : std::vector<int>{2, 2, 2, 2};
    stem_ = register_module("stem", torch::nn::Sequential(
                                        convolution(3, 64, 7, 2), torch::nn::BatchNorm2d(64),
                                        torch::nn::ReLU(),
                                        torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1))));
    int64_t channels = 64;
    for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
      const int64_t width = int64_t{64} << stage;
      torch::nn::Sequential layer;
      for (int block = 0; block < blocks[stage]; ++block) {
        const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
        ResidualBlock residual(channels, width, stride, bottleneck);
        layer->push_back(residual);
        blocks_.push_back(residual);
        block_names_.push_back(fmt::format("layer{}.{}", stage + 1, block));
        channels = bottleneck ? width * 4 : width;
      }
      stages_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc_ = register_module("fc", torch::nn::Linear(channels, classes));

    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (auto* norm = module->as<torch::nn::BatchNorm2d>()) {
        torch::nn::init::ones_(norm->weight);
        torch::nn::init::zeros_(norm->bias);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (int layer = 0; layer < layer_count(); ++layer) x = forward_layer(layer, x);
    return x;
  }

  // As a chain (workload.h's LayerChain): the stem, every residual block, the head (pooling and fc).
  int layer_count() const { return static_cast<int>(blocks_.size()) + 2; }
  std::string layer_name(int layer) const {
    if (layer == 0) return "stem";
    if (layer == layer_count() - 1) return "fc";
    return block_names_[static_cast<std::size_t>(layer - 1)];
  }
  torch::nn::Module& layer(int index) {
    if (index == 0) return *stem_;
    if (index == layer_count() - 1) return *fc_;
    return *blocks_[static_cast<std::size_t>(index - 1)];
  }
  torch::Tensor forward_layer(int index, const torch::Tensor& x) {
    if (index == 0) return stem_->forward(x);
    if (index == layer_count() - 1) return fc_(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
    return blocks_[static_cast<std::size_t>(index - 1)]->forward(x);
  }

 private:
  std::vector<ResidualBlock> blocks_;  // the stages' blocks in order (stages_ hold the same modules)
  std::vector<std::string> block_names_;
  torch::nn::Sequential stem_{nullptr};
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

// Chain layers for the pipeline scheme: the stem, each residual block, the head. BatchNorm then
// normalises each micro-batch by its own statistics: a pipeline's steps differ from one rank's
// whole batch (docs/pipeline.md).
class SyntheticResNet final : public TensorClassifier, public LayerChain {
 public:
  SyntheticResNet(const PointSettings& settings, int cuda_device)
      : TensorClassifier(torch_device(settings.device, cuda_device)) {
    const ResnetOptions options = resnet_options(settings);
    const int64_t train = settings.dataset_size > 0 ? settings.dataset_size : kDefaultSyntheticImages;
    const int64_t test = settings.test_size > 0 ? settings.test_size : kDefaultSyntheticTestImages;
    const int64_t size = options.image_size;
    // The same seed on every rank: every rank holds the same synthetic set and shards it by position.
    torch::manual_seed(static_cast<uint64_t>(settings.seed));
    train_inputs_ = torch::randn({train, 3, size, size});
    train_labels_ = torch::randint(options.num_classes, {train}, torch::kInt64);
    test_inputs_ = torch::randn({test, 3, size, size});
    test_labels_ = torch::randint(options.num_classes, {test}, torch::kInt64);
    resnet_ = ResNet(options.depth, options.num_classes);
    model_ = resnet_.ptr();
    // NCHW on purpose: unlike mnist_cnn, channels-last made this model slower with LibTorch 1.13
    // on the CPU (ResNet-18, 32×32, batch 16, one thread: 138-154 images/s against 193).
    place_on_device();
  }

  double forward_backward(std::span<const int64_t> positions) override {
    resnet_->train();
    const auto index = position_index(positions, device_);
    const auto loss = torch::cross_entropy_loss(resnet_->forward(train_inputs_.index_select(0, index)),
                                                train_labels_.index_select(0, index));
    mark_backward();
    loss.backward();
    return loss.item<double>();
  }

  std::vector<torch::Tensor> buffers() override { return resnet_->buffers(); }

  LayerChain* layer_chain() override { return this; }
  int layer_count() const override { return resnet_->layer_count(); }
  std::string layer_name(int layer) const override { return resnet_->layer_name(layer); }
  std::vector<torch::Tensor> layer_parameters(int layer) override { return resnet_->layer(layer).parameters(); }
  std::vector<torch::Tensor> layer_buffers(int layer) override { return resnet_->layer(layer).buffers(); }
  torch::Tensor chain_input(std::span<const int64_t> positions) override {
    return train_inputs_.index_select(0, position_index(positions, device_));
  }
  torch::Tensor forward_layer(int layer, const torch::Tensor& x) override {
    if (!resnet_->is_training()) resnet_->train();  // after rank 0's evaluation
    return resnet_->forward_layer(layer, x);
  }
  torch::Tensor chain_loss(const torch::Tensor& output, std::span<const int64_t> positions) override {
    return torch::cross_entropy_loss(output, train_labels_.index_select(0, position_index(positions, device_)));
  }

  Evaluation evaluate() override {
    resnet_->eval();  // BatchNorm with its running statistics
    return evaluate_classifier(
        [this](const torch::Tensor& x) { return torch::log_softmax(resnet_->forward(x), 1); },
        test_inputs_, test_labels_, 64);
  }

 private:
  ResNet resnet_{nullptr};  // model_, with its forward()
};

}  // namespace

std::unique_ptr<Workload> make_resnet(const PointSettings& settings, int cuda_device) {
  return std::make_unique<SyntheticResNet>(settings, cuda_device);
}

}  // namespace harness
