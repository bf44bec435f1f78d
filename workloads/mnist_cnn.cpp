#include "workloads/mnist_cnn.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "workloads/idx_reader.h"
#include "workloads/classification.h"
#include "workloads/workload.h"

namespace harness {
namespace {

std::string data_directory(const PointSettings& settings) {
  return settings.data_path.empty() ? kDefaultMnistDirectory : settings.data_path;
}

// "<dir>/<name>" or "<dir>/<name>.gz", whichever exists.
std::string idx_file(const PointSettings& settings, const std::string& name) {
  const std::filesystem::path directory = data_directory(settings);
  for (const auto& candidate : {directory / name, directory / (name + ".gz")}) {
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  throw ConfigError(fmt::format(
      "data_path: {}: no {} or {}.gz (expected a directory of MNIST-format IDX files; Debian's "
      "Fashion-MNIST is in package dataset-fashion-mnist)",
      directory.string(), name, name));
}

struct Split {
  std::string images;
  std::string labels;
};

Split split_files(const PointSettings& settings, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  return {idx_file(settings, prefix + "-images-idx3-ubyte"),
          idx_file(settings, prefix + "-labels-idx1-ubyte")};
}

// Checks that images are N×28×28 and labels N; returns N.
int64_t checked_count(const Split& split) {
  const auto images = read_idx_shape(split.images);
  const auto labels = read_idx_shape(split.labels);
  if (images.size() != 3 || images[1] != 28 || images[2] != 28) {
    throw ConfigError(fmt::format("data_path: {}: expected images of N × 28 × 28", split.images));
  }
  if (labels.size() != 1 || labels[0] != images[0]) {
    throw ConfigError(fmt::format("data_path: {}: expected {} labels to match {}", split.labels,
                                  images[0], split.images));
  }
  return images[0];
}

torch::Tensor image_tensor(const IdxArray& images) {
  const int64_t count = images.shape[0];
  auto bytes = torch::from_blob(const_cast<uint8_t*>(images.data.data()), {count, 1, 28, 28},
                                torch::kUInt8);
  return bytes.to(torch::kFloat32).div_(255.0F);
}

torch::Tensor label_tensor(const IdxArray& labels, const std::string& path) {
  for (const uint8_t label : labels.data) {
    if (label > 9) throw ConfigError(fmt::format("{}: label {} is not a class 0..9", path, label));
  }
  return torch::from_blob(const_cast<uint8_t*>(labels.data.data()), {labels.shape[0]},
                          torch::kUInt8)
      .to(torch::kInt64);
}

class MnistCnn final : public TensorClassifier {
 public:
  MnistCnn(const PointSettings& settings, int cuda_device)
      : TensorClassifier(torch_device(settings.device, cuda_device)) {
    const Split train = split_files(settings, true);
    const Split test = split_files(settings, false);
    const int64_t train_count = settings.dataset_size > 0 ? settings.dataset_size : 0;
    const int64_t test_count = settings.test_size > 0 ? settings.test_size : 0;
    train_inputs_ = image_tensor(read_idx(train.images, train_count));
    train_labels_ = label_tensor(read_idx(train.labels, train_count), train.labels);
    test_inputs_ = image_tensor(read_idx(test.images, test_count));
    test_labels_ = label_tensor(read_idx(test.labels, test_count), test.labels);
    // Standardise with the training images' statistics (the same on every rank).
    const double mean = train_inputs_.mean().item<double>();
    const double deviation = train_inputs_.std().item<double>();
    train_inputs_.sub_(mean).div_(deviation);
    test_inputs_.sub_(mean).div_(deviation);

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
    const auto index = position_index(positions, device_);
    const auto loss = torch::nll_loss(forward(train_inputs_.index_select(0, index)),
                                      train_labels_.index_select(0, index));
    mark_backward();
    loss.backward();
    return loss.item<double>();
  }

  Evaluation evaluate() override {
    // At most 1000 images at a time bounds the activations' memory.
    return evaluate_classifier([this](const torch::Tensor& x) { return forward(x); }, test_inputs_,
                               test_labels_, 1000);
  }

 private:
  // The example's conv → ReLU → conv → ReLU → max-pool, with the last ReLU after the pooling:
  // ReLU is monotonic, so the two commute, and it then touches a quarter of the elements. The
  // convolutions run channels-last (their weights are stored so), and the pooled activations are
  // flattened in that memory order, (h, w, c) rather than (c, h, w): a view, where going back to
  // NCHW would cost a transposing copy forward and another backward (7% of the step). fc1 is
  // randomly initialised, so which of its 9216 inputs is which is only a naming of its columns.
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::max_pool2d(conv2_(torch::relu(conv1_(x))), 2);
    y = torch::relu(y.permute({0, 2, 3, 1}).flatten(1));
    return torch::log_softmax(fc2_(torch::relu(fc1_(y))), 1);
  }

  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

}  // namespace

int64_t mnist_cnn_train_samples(const PointSettings& settings) {
  const int64_t train = checked_count(split_files(settings, true));
  const int64_t test = checked_count(split_files(settings, false));
  if (settings.test_size > test) {
    throw ConfigError(fmt::format("test_size: expected at most {} (the held-out images), got {}",
                                  test, settings.test_size));
  }
  return train;
}

std::unique_ptr<Workload> make_mnist_cnn(const PointSettings& settings, int cuda_device) {
  return std::make_unique<MnistCnn>(settings, cuda_device);
}

}  // namespace harness
