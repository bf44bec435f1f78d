// `mnist_cnn`: the small CNN of the PyTorch MNIST example, without dropout: conv 3×3 (32) → ReLU
// → conv 3×3 (64) → ReLU → max-pool 2 → fc 9216→128 → ReLU → fc 128→10, log-softmax with
// negative log-likelihood loss, plain SGD. 1.2 M parameters, most in the first fc layer.
//
// Data: any directory with the four MNIST-format IDX files (train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally .gz);
// by default Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). Pixels are
// standardised with the mean and deviation of the training images used.
//
// Settings used: data_path (a directory), dataset_size (≤ 60000), test_size (held-out images
// evaluated after each epoch, 0 = all 10000), seed, lr, batch_size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "harness/study/settings.h"

namespace harness {

class Workload;

inline constexpr const char* kDefaultMnistDirectory = "/usr/share/datasets/fashion-mnist";

int64_t mnist_cnn_train_samples(const PointSettings& settings);
std::unique_ptr<Workload> make_mnist_cnn(const PointSettings& settings, int cuda_device);

}  // namespace harness
