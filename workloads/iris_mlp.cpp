#include "workloads/iris_mlp.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "harness/common/errors.h"
#include "workloads/iris_data.h"
#include "workloads/classification.h"
#include "workloads/iris_tensors.h"

namespace harness {
namespace {

torch::Tensor rows_of_features(const IrisData& data, const std::vector<int64_t>& rows) {
  auto tensor = torch::empty({static_cast<int64_t>(rows.size()), IrisData::kFeatures});
  float* out = tensor.data_ptr<float>();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::copy_n(&data.features[rows[i] * IrisData::kFeatures], IrisData::kFeatures,
                out + i * IrisData::kFeatures);
  }
  return tensor;
}

torch::Tensor labels_of(const IrisData& data, const std::vector<int64_t>& rows) {
  auto tensor = torch::empty({static_cast<int64_t>(rows.size())}, torch::kInt64);
  for (std::size_t i = 0; i < rows.size(); ++i) tensor[i] = data.labels[rows[i]];
  return tensor;
}

// The data set, the split and the parameters, shared by both engines. Parameters are the
// torch::nn::Linear layers' tensors in both, so the same seed gives the same initial weights and
// the trainer sees the same parameter list (weight, bias per layer, input to output).
class IrisMlpBase : public TensorClassifier {
 public:
  IrisMlpBase(const PointSettings& settings, int cuda_device)
      : TensorClassifier(torch_device(settings.device, cuda_device)) {
    IrisTensors data = load_iris_tensors(settings);
    train_inputs_ = std::move(data.train_features);
    train_labels_ = std::move(data.train_labels);
    train_targets_ = torch::one_hot(train_labels_, IrisData::kClasses).to(torch::kFloat32);
    test_inputs_ = std::move(data.test_features);
    test_labels_ = std::move(data.test_labels);
    test_targets_ = torch::one_hot(test_labels_, IrisData::kClasses).to(torch::kFloat32);

    // Same seed on every rank; rank 0's weights are broadcast anyway.
    torch::manual_seed(static_cast<uint64_t>(settings.seed));
    model_ = std::make_shared<torch::nn::Module>();
    hidden1_ = model_->register_module("hidden1", torch::nn::Linear(IrisData::kFeatures, kHidden1));
    hidden2_ = model_->register_module("hidden2", torch::nn::Linear(kHidden1, kHidden2));
    output_ = model_->register_module("output", torch::nn::Linear(kHidden2, IrisData::kClasses));
    place_on_device({&train_targets_, &test_targets_});
  }

 protected:
  static constexpr int kHidden1 = 30;
  static constexpr int kHidden2 = 20;

  torch::nn::Linear hidden1_{nullptr}, hidden2_{nullptr}, output_{nullptr};
  torch::Tensor train_targets_, test_targets_;  // one-hot labels, for the squared error
};

// Three layers for the pipeline scheme: each linear layer with its sigmoid.
class IrisMlpTorch final : public IrisMlpBase, public LayerChain {
 public:
  using IrisMlpBase::IrisMlpBase;

  double forward_backward(std::span<const int64_t> positions) override {
    const auto loss = chain_loss(forward(chain_input(positions)), positions);
    mark_backward();
    loss.backward();
    return loss.item<double>();
  }

  Evaluation evaluate() override {
    torch::NoGradGuard no_grad;
    const auto outputs = forward(test_inputs_);
    Evaluation evaluation;
    evaluation.loss = torch::mse_loss(outputs, test_targets_).item<double>();
    evaluation.accuracy =
        outputs.argmax(1).eq(test_labels_).to(torch::kFloat64).mean().item<double>();
    evaluation.samples = test_size();
    return evaluation;
  }

  LayerChain* layer_chain() override { return this; }
  int layer_count() const override { return 3; }
  std::string layer_name(int layer) const override {
    static constexpr const char* kNames[] = {"hidden1", "hidden2", "output"};
    return kNames[layer];
  }
  std::vector<torch::Tensor> layer_parameters(int layer) override { return linear(layer)->parameters(); }
  torch::Tensor chain_input(std::span<const int64_t> positions) override {
    return train_inputs_.index_select(0, position_index(positions, device_));
  }
  torch::Tensor forward_layer(int layer, const torch::Tensor& x) override { return torch::sigmoid(linear(layer)(x)); }
  torch::Tensor chain_loss(const torch::Tensor& output, std::span<const int64_t> positions) override {
    return torch::mse_loss(output, train_targets_.index_select(0, position_index(positions, device_)));
  }

 private:
  torch::nn::Linear& linear(int layer) {
    torch::nn::Linear* layers[] = {&hidden1_, &hidden2_, &output_};
    return *layers[layer];
  }
  torch::Tensor forward(torch::Tensor x) {
    for (int layer = 0; layer < layer_count(); ++layer) x = forward_layer(layer, x);
    return x;
  }
};

// The from-scratch network of the course project: forward and backward by hand, matrix products
// through cblas_sgemm, no autograd and no tensor allocation per step. Computes what
// IrisMlpTorch computes (mean squared error over batch × classes, sigmoid everywhere).
class IrisMlpBlas final : public IrisMlpBase {
 public:
  IrisMlpBlas(const PointSettings& settings, int cuda_device) : IrisMlpBase(settings, cuda_device) {
    if (!device_.is_cpu()) throw ConfigError("engine: \"blas\" runs on the cpu device only");
  }

  double forward_backward(std::span<const int64_t> positions) override {
    const auto batch = static_cast<int>(positions.size());
    gather(positions);
    forward(input_.data(), batch);

    // Layer by layer from the output: delta = dLoss/d(pre-activation), sigmoid' = a(1 - a).
    const float* targets = batch_targets_.data();
    const std::size_t outputs = static_cast<std::size_t>(batch) * IrisData::kClasses;
    const float mean_scale = 2.0F / static_cast<float>(outputs);
    double squared_error = 0;
    delta3_.resize(outputs);
    for (std::size_t i = 0; i < outputs; ++i) {
      const float difference = out_[i] - targets[i];
      squared_error += static_cast<double>(difference) * difference;
      delta3_[i] = mean_scale * difference * out_[i] * (1.0F - out_[i]);
    }
    mark_backward();
    delta2_.resize(static_cast<std::size_t>(batch) * kHidden2);
    delta1_.resize(static_cast<std::size_t>(batch) * kHidden1);
    backward_layer(output_, delta3_.data(), hidden2_out_.data(), delta2_.data(), batch);
    backward_layer(hidden2_, delta2_.data(), hidden1_out_.data(), delta1_.data(), batch);
    backward_layer(hidden1_, delta1_.data(), input_.data(), nullptr, batch);
    return squared_error / static_cast<double>(outputs);
  }

  Evaluation evaluate() override {
    const auto count = static_cast<int>(test_size());
    const float* features = test_inputs_.data_ptr<float>();
    forward(features, count);
    const float* targets = test_targets_.data_ptr<float>();
    const int64_t* labels = test_labels_.data_ptr<int64_t>();
    double squared_error = 0;
    int64_t correct = 0;
    for (int row = 0; row < count; ++row) {
      const float* out = &out_[static_cast<std::size_t>(row) * IrisData::kClasses];
      for (int c = 0; c < IrisData::kClasses; ++c) {
        const float difference = out[c] - targets[row * IrisData::kClasses + c];
        squared_error += static_cast<double>(difference) * difference;
      }
      const auto predicted = std::max_element(out, out + IrisData::kClasses) - out;
      if (predicted == labels[row]) ++correct;
    }
    Evaluation evaluation;
    evaluation.loss = squared_error / (static_cast<double>(count) * IrisData::kClasses);
    evaluation.accuracy = static_cast<double>(correct) / count;
    evaluation.samples = count;
    return evaluation;
  }

 private:
  // activations (rows × out) = sigmoid(inputs (rows × in) · weightᵀ + bias)
  static void dense_sigmoid(torch::nn::Linear& layer, const float* inputs, int rows,
                            std::vector<float>& activations) {
    const auto in = static_cast<int>(layer->weight.size(1));
    const auto out = static_cast<int>(layer->weight.size(0));
    activations.resize(static_cast<std::size_t>(rows) * out);
    const float* bias = layer->bias.data_ptr<float>();
    for (int r = 0; r < rows; ++r) std::copy_n(bias, out, &activations[static_cast<std::size_t>(r) * out]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0F, inputs, in,
                layer->weight.data_ptr<float>(), in, 1.0F, activations.data(), out);
    for (float& value : activations) value = 1.0F / (1.0F + std::exp(-value));
  }

  void forward(const float* inputs, int rows) {
    dense_sigmoid(hidden1_, inputs, rows, hidden1_out_);
    dense_sigmoid(hidden2_, hidden1_out_.data(), rows, hidden2_out_);
    dense_sigmoid(output_, hidden2_out_.data(), rows, out_);
  }

  // Given delta (rows × out) of `layer`, whose inputs were `inputs` (rows × in): accumulates
  // weight.grad += deltaᵀ · inputs and bias.grad += column sums of delta, and, when
  // `input_delta` is not null, writes the delta of the layer below:
  // (delta · weight) ⊙ inputs ⊙ (1 - inputs), the inputs being that layer's sigmoid outputs.
  static void backward_layer(torch::nn::Linear& layer, const float* delta, const float* inputs,
                             float* input_delta, int rows) {
    const auto in = static_cast<int>(layer->weight.size(1));
    const auto out = static_cast<int>(layer->weight.size(0));
    // Here, where they are written: evaluation (a forward pass) needs no gradients at all.
    if (!layer->weight.grad().is_contiguous() || !layer->bias.grad().is_contiguous()) {
      throw NotSupported("engine \"blas\": gradients must be contiguous row-major buffers");
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, rows, 1.0F, delta, out, inputs,
                in, 1.0F, layer->weight.mutable_grad().data_ptr<float>(), in);
    float* bias_grad = layer->bias.mutable_grad().data_ptr<float>();
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < out; ++o) bias_grad[o] += delta[r * out + o];
    }
    if (input_delta == nullptr) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, in, out, 1.0F, delta, out,
                layer->weight.data_ptr<float>(), in, 0.0F, input_delta, in);
    const std::size_t count = static_cast<std::size_t>(rows) * in;
    for (std::size_t i = 0; i < count; ++i) input_delta[i] *= inputs[i] * (1.0F - inputs[i]);
  }

  void gather(std::span<const int64_t> positions) {
    const float* features = train_inputs_.data_ptr<float>();
    const float* targets = train_targets_.data_ptr<float>();
    input_.resize(positions.size() * IrisData::kFeatures);
    batch_targets_.resize(positions.size() * IrisData::kClasses);
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const auto row = static_cast<std::size_t>(positions[i]);
      std::copy_n(features + row * IrisData::kFeatures, IrisData::kFeatures,
                  &input_[i * IrisData::kFeatures]);
      std::copy_n(targets + row * IrisData::kClasses, IrisData::kClasses,
                  &batch_targets_[i * IrisData::kClasses]);
    }
  }

  // Scratch buffers, grown once to the largest batch.
  std::vector<float> input_, batch_targets_, hidden1_out_, hidden2_out_, out_;
  std::vector<float> delta1_, delta2_, delta3_;
};

}  // namespace

IrisTensors load_iris_tensors(const PointSettings& settings) {
  IrisData data = load_iris_for(settings);
  IrisSplit split = split_iris(data, kIrisTestFraction, static_cast<uint64_t>(settings.seed));
  if (settings.dataset_size > 0) split.train.resize(static_cast<std::size_t>(settings.dataset_size));
  standardize(data, split.train);
  return {rows_of_features(data, split.train), labels_of(data, split.train), rows_of_features(data, split.test),
          labels_of(data, split.test)};
}

std::unique_ptr<Workload> make_iris_mlp(const PointSettings& settings, int cuda_device) {
  if (settings.engine == "blas") return std::make_unique<IrisMlpBlas>(settings, cuda_device);
  return std::make_unique<IrisMlpTorch>(settings, cuda_device);
}

}  // namespace harness
