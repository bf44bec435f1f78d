#include "workloads/torchscript.h"

#include <torch/script.h>
#include <torch/types.h>
#include <torch/version.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "workloads/iris_tensors.h"
#include "workloads/mnist_tensors.h"
#include "workloads/resnet.h"
#include "workloads/workload.h"

namespace harness {
namespace {

// The point's reason is one line. LibTorch's messages carry a C++ backtrace after their first line;
// the TorchScript interpreter's start "The following operation failed in the TorchScript
// interpreter." and end with the Python-style error ("RuntimeError: Given groups=1, ..."), which
// says what went wrong.
std::string one_line_reason(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  const std::string text = torch_error != nullptr ? torch_error->what_without_backtrace() : error.what();
  std::istringstream lines(text);
  std::string line;
  std::string raised;
  while (std::getline(lines, line)) {
    // "RuntimeError: ...", "ValueError: ...": a first word naming an error, then ": ".
    const std::string_view first_word = std::string_view(line).substr(0, line.find(": "));
    if (first_word.size() < line.size() && first_word.find(' ') == std::string_view::npos &&
        (first_word.ends_with("Error") || first_word.ends_with("Exception"))) {
      raised = line;
    }
  }
  return raised.empty() ? text.substr(0, text.find('\n')) : raised;
}

std::string shape_text(c10::IntArrayRef shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

class TorchScriptModel final : public Workload {
 public:
  TorchScriptModel(const PointSettings& settings, int cuda_device)
      : device_(torch_device(settings.device, cuda_device)),
        options_(torchscript_options(settings)),
        shape_(torchscript_shape(settings)),
        file_(torchscript_model_file(settings)) {
    // The weights are the file's; the seed draws the synthetic data and the dropout masks (the same
    // on every rank and in every run of the point).
    torch::manual_seed(static_cast<uint64_t>(settings.seed));
    load_data(settings);
    try {
      module_ = torch::jit::load(file_.string(), device_);
    } catch (const std::exception& error) {
      throw std::runtime_error(fmt::format("model_path: {}: LibTorch {} cannot load it: {}", file_.string(),
                                           TORCH_VERSION, one_line_reason(error)));
    }
    for (const auto& parameter : module_.parameters()) parameters_.push_back(parameter);
    for (const auto& buffer : module_.buffers()) buffers_.push_back(buffer);
    check_output();
  }

  int64_t train_size() const override { return train_labels_.size(0); }
  int64_t test_size() const override { return test_labels_.size(0); }
  std::vector<torch::Tensor> parameters() override { return parameters_; }
  std::vector<torch::Tensor> buffers() override { return buffers_; }

  double forward_backward(std::span<const int64_t> positions) override {
    // Back to training mode only after an evaluation: train() walks every submodule.
    if (!module_.is_training()) module_.train(true);
    const auto index = position_index(positions, device_);
    const auto loss = loss_of(forward(train_inputs_.index_select(0, index)), train_labels_.index_select(0, index));
    mark_backward();
    loss.backward();
    return loss.item<double>();
  }

  Evaluation evaluate() override {
    torch::NoGradGuard no_grad;
    module_.train(false);  // BatchNorm with its running statistics, no dropout
    constexpr int64_t kChunk = 256;
    const int64_t count = test_inputs_.size(0);
    double loss_sum = 0;
    int64_t correct = 0;
    for (int64_t start = 0; start < count; start += kChunk) {
      const int64_t length = std::min(kChunk, count - start);
      const auto outputs = forward(test_inputs_.narrow(0, start, length));
      const auto labels = test_labels_.narrow(0, start, length);
      loss_sum += loss_of(outputs, labels).item<double>() * static_cast<double>(length);
      correct += outputs.argmax(1).eq(labels).sum().item<int64_t>();
    }
    Evaluation evaluation;
    evaluation.samples = count;
    evaluation.loss = count > 0 ? loss_sum / static_cast<double>(count) : 0;
    evaluation.accuracy = count > 0 ? static_cast<double>(correct) / static_cast<double>(count) : 0;
    return evaluation;
  }

 private:
  void load_data(const PointSettings& settings) {
    if (options_.data == "iris") {
      IrisTensors data = load_iris_tensors(settings);  // as iris_mlp reads them
      train_inputs_ = std::move(data.train_features);
      train_labels_ = std::move(data.train_labels);
      test_inputs_ = std::move(data.test_features);
      test_labels_ = std::move(data.test_labels);
    } else if (options_.data == "mnist") {
      // As mnist_cnn reads them.
      MnistTensors data = load_mnist_tensors(settings);
      train_inputs_ = std::move(data.train_images);
      train_labels_ = std::move(data.train_labels);
      test_inputs_ = std::move(data.test_images);
      test_labels_ = std::move(data.test_labels);
    } else {
      // Every rank holds the same synthetic set (the seed) and shards it by position.
      const int64_t train = settings.dataset_size > 0 ? settings.dataset_size : kDefaultSyntheticImages;
      const int64_t test = settings.test_size > 0 ? settings.test_size : kDefaultSyntheticTestImages;
      std::vector<int64_t> train_shape{train};
      std::vector<int64_t> test_shape{test};
      train_shape.insert(train_shape.end(), shape_.input_shape.begin(), shape_.input_shape.end());
      test_shape.insert(test_shape.end(), shape_.input_shape.begin(), shape_.input_shape.end());
      train_inputs_ = torch::randn(train_shape);
      train_labels_ = torch::randint(shape_.classes, {train}, torch::kInt64);
      test_inputs_ = torch::randn(test_shape);
      test_labels_ = torch::randint(shape_.classes, {test}, torch::kInt64);
    }
    for (torch::Tensor* tensor : {&train_inputs_, &train_labels_, &test_inputs_, &test_labels_}) {
      *tensor = tensor->to(device_);
    }
  }

  // One forward pass on two training samples (one where there is only one) before any step: a
  // module that cannot run on this LibTorch, takes another input, or returns something other than
  // [batch, classes] fails the point here, saying what was expected.
  void check_output() {
    torch::NoGradGuard no_grad;
    module_.train(false);
    const int64_t batch = std::min<int64_t>(2, train_inputs_.size(0));
    const auto input = train_inputs_.narrow(0, 0, batch);
    const std::string expected =
        fmt::format("one tensor [{}, {}] (a batch of {} samples of {}, classes {})", batch, shape_.classes, batch,
                    shape_text(shape_.input_shape), shape_.classes);
    c10::IValue output;
    try {
      output = module_.forward({input});
    } catch (const std::exception& error) {
      throw std::runtime_error(fmt::format("model_path: {}: its forward on {} failed: {}", file_.string(),
                                           shape_text(input.sizes()), one_line_reason(error)));
    }
    if (!output.isTensor()) {
      throw std::runtime_error(fmt::format("model_path: {}: expected its forward to return {}, got a {}",
                                           file_.string(), expected, output.tagKind()));
    }
    const auto sizes = output.toTensor().sizes();
    if (sizes.size() != 2 || sizes[0] != batch || sizes[1] != shape_.classes) {
      throw std::runtime_error(fmt::format("model_path: {}: expected its forward to return {}, got {}",
                                           file_.string(), expected, shape_text(sizes)));
    }
    if (!output.toTensor().is_floating_point()) {
      throw std::runtime_error(fmt::format("model_path: {}: expected its forward to return floating-point {}, got {}",
                                           file_.string(), expected, c10::toString(output.toTensor().scalar_type())));
    }
  }

  // The module's forward; an error inside it (the interpreter's, many lines) fails the point in one.
  torch::Tensor forward(const torch::Tensor& input) {
    try {
      return module_.forward({input}).toTensor();
    } catch (const std::exception& error) {
      throw std::runtime_error(fmt::format("model_path: {}: its forward failed: {}", file_.string(),
                                           one_line_reason(error)));
    }
  }

  torch::Tensor loss_of(const torch::Tensor& outputs, const torch::Tensor& labels) const {
    if (options_.loss == "mse") {
      return torch::mse_loss(outputs, torch::one_hot(labels, shape_.classes).to(outputs.scalar_type()));
    }
    return torch::cross_entropy_loss(outputs, labels);
  }

  torch::Device device_;
  TorchScriptOptions options_;
  TorchScriptShape shape_;
  std::filesystem::path file_;
  torch::jit::Module module_;
  std::vector<torch::Tensor> parameters_, buffers_;
  torch::Tensor train_inputs_, train_labels_, test_inputs_, test_labels_;
};

}  // namespace

std::unique_ptr<Workload> make_torchscript(const PointSettings& settings, int cuda_device) {
  return std::make_unique<TorchScriptModel>(settings, cuda_device);
}

}  // namespace harness
