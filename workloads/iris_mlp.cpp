#include "workloads/iris_mlp.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <fmt/format.h>

#include "harness/errors.h"
#include "workloads/iris_data.h"
#include "workloads/workload.h"

namespace harness {
namespace {

std::string iris_path(const PointSettings& settings) {
  return settings.data_path.empty() ? default_iris_path() : settings.data_path;
}

IrisData load_for(const PointSettings& settings) {
  try {
    return load_iris_csv(iris_path(settings));
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("data_path: ") + error.what());
  }
}

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

class IrisMlp final : public Workload {
 public:
  explicit IrisMlp(const PointSettings& settings) {
    IrisData data = load_for(settings);
    IrisSplit split = split_iris(data, kIrisTestFraction, static_cast<uint64_t>(settings.seed));
    if (settings.dataset_size > 0) split.train.resize(settings.dataset_size);
    standardize(data, split.train);

    train_features_ = rows_of_features(data, split.train);
    train_labels_ = labels_of(data, split.train);
    train_targets_ = torch::one_hot(train_labels_, IrisData::kClasses).to(torch::kFloat32);
    test_features_ = rows_of_features(data, split.test);
    test_labels_ = labels_of(data, split.test);
    test_targets_ = torch::one_hot(test_labels_, IrisData::kClasses).to(torch::kFloat32);

    // Same seed on every rank; rank 0's weights are broadcast anyway.
    torch::manual_seed(static_cast<uint64_t>(settings.seed));
    layers_ = std::make_shared<torch::nn::Module>();
    hidden1_ = layers_->register_module("hidden1", torch::nn::Linear(IrisData::kFeatures, 30));
    hidden2_ = layers_->register_module("hidden2", torch::nn::Linear(30, 20));
    output_ = layers_->register_module("output", torch::nn::Linear(20, IrisData::kClasses));
  }

  int64_t train_size() const override { return train_labels_.size(0); }
  int64_t test_size() const override { return test_labels_.size(0); }
  std::vector<torch::Tensor> parameters() override { return layers_->parameters(); }

  double forward_backward(std::span<const int64_t> positions) override {
    const auto index = torch::from_blob(const_cast<int64_t*>(positions.data()),
                                        {static_cast<int64_t>(positions.size())}, torch::kInt64);
    const auto loss = torch::mse_loss(forward(train_features_.index_select(0, index)),
                                      train_targets_.index_select(0, index));
    loss.backward();
    return loss.item<double>();
  }

  Evaluation evaluate() override {
    torch::NoGradGuard no_grad;
    const auto outputs = forward(test_features_);
    Evaluation evaluation;
    evaluation.loss = torch::mse_loss(outputs, test_targets_).item<double>();
    evaluation.accuracy =
        outputs.argmax(1).eq(test_labels_).to(torch::kFloat64).mean().item<double>();
    evaluation.samples = test_size();
    return evaluation;
  }

 private:
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::sigmoid(output_(torch::sigmoid(hidden2_(torch::sigmoid(hidden1_(x))))));
  }

  std::shared_ptr<torch::nn::Module> layers_;
  torch::nn::Linear hidden1_{nullptr}, hidden2_{nullptr}, output_{nullptr};
  torch::Tensor train_features_, train_labels_, train_targets_;
  torch::Tensor test_features_, test_labels_, test_targets_;
};

}  // namespace

int64_t iris_mlp_train_samples(const PointSettings& settings) {
  const IrisData data = load_for(settings);
  return static_cast<int64_t>(
      split_iris(data, kIrisTestFraction, static_cast<uint64_t>(settings.seed)).train.size());
}

std::unique_ptr<Workload> make_iris_mlp(const PointSettings& settings) {
  return std::make_unique<IrisMlp>(settings);
}

}  // namespace harness
