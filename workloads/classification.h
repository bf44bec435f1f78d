// Held-out evaluation shared by the image classifiers (mnist_cnn, resnet).
#pragma once

#include <torch/types.h>

#include <algorithm>

#include "workloads/workload.h"

namespace harness {

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
