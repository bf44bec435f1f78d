// The Iris rows as the LibTorch workloads train on them (iris_mlp, and torchscript with model_data
// "iris"): the point's CSV (load_iris_for), split with its seed, the first dataset_size training
// rows, standardised with the training rows' statistics; features [N, 4] float, labels int64.
#pragma once

#include <torch/types.h>

#include "harness/study/settings.h"

namespace harness {

struct IrisTensors {
  torch::Tensor train_features, train_labels, test_features, test_labels;
};

// Throws ConfigError "data_path: ..." for a file that is not an Iris CSV.
IrisTensors load_iris_tensors(const PointSettings& settings);

}  // namespace harness
