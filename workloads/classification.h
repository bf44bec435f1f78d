// What the LibTorch classifiers (iris_mlp, mnist_cnn, resnet) share: their data and model held as
// tensors on the point's device, and the held-out evaluation of the image classifiers.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <algorithm>
#include <initializer_list>
#include <memory>

#include "workloads/workload.h"

namespace harness {

// A classifier whose training and held-out sets are tensors in memory (positions index their first
// dimension) and whose parameters are its model's.
class TensorClassifier : public Workload {
 public:
  int64_t train_size() const override { return train_labels_.size(0); }
  int64_t test_size() const override { return test_labels_.size(0); }
  std::vector<torch::Tensor> parameters() override { return model_->parameters(); }

 protected:
  explicit TensorClassifier(torch::Device device) : device_(device) {}

  // Moves the model, the four data tensors and `more` (targets, say) to device_: the data sets
  // here fit in its memory, so a step indexes them there without copies from the host.
  void place_on_device(std::initializer_list<torch::Tensor*> more = {}) {
    model_->to(device_);
    for (torch::Tensor* tensor : {&train_inputs_, &train_labels_, &test_inputs_, &test_labels_}) {
      *tensor = tensor->to(device_);
    }
    for (torch::Tensor* tensor : more) *tensor = tensor->to(device_);
  }

  torch::Device device_;
  std::shared_ptr<torch::nn::Module> model_;
  torch::Tensor train_inputs_, train_labels_, test_inputs_, test_labels_;
};

// Mean negative log-likelihood and accuracy over `images`, `chunk` images at a time (bounding
// the activations' memory). `log_probabilities` maps a batch of images to log-softmax outputs.
template <typename LogProbabilities>
Evaluation evaluate_classifier(LogProbabilities log_probabilities, const torch::Tensor& images,
                               const torch::Tensor& labels, int64_t chunk) {
  torch::NoGradGuard no_grad;
  const int64_t count = images.size(0);
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t start = 0; start < count; start += chunk) {
    const int64_t length = std::min(chunk, count - start);
    const torch::Tensor outputs = log_probabilities(images.narrow(0, start, length));
    const auto expected = labels.narrow(0, start, length);
    loss_sum += torch::nll_loss(outputs, expected, {}, at::Reduction::Sum).item<double>();
    correct += outputs.argmax(1).eq(expected).sum().item<int64_t>();
  }
  Evaluation evaluation;
  evaluation.samples = count;
  evaluation.loss = loss_sum / static_cast<double>(count);
  evaluation.accuracy = static_cast<double>(correct) / static_cast<double>(count);
  return evaluation;
}

}  // namespace harness
