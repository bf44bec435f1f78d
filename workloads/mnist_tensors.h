// MNIST-format data as the LibTorch workloads train on it (mnist_cnn, and torchscript with
// model_data "mnist"): the first dataset_size training and test_size held-out images of the point's
// data_path as [N, 1, 28, 28] floats standardised with the training images' mean and deviation,
// and their labels as int64 classes 0 to 9.
#pragma once

#include <torch/types.h>

#include "harness/study/settings.h"

namespace harness {

struct MnistTensors {
  torch::Tensor train_images, train_labels, test_images, test_labels;
};

// Throws ConfigError for a missing file or a label that is not a class 0..9.
MnistTensors load_mnist_tensors(const PointSettings& settings);

}  // namespace harness
