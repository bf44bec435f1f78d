// `iris_mlp`: the network of the classic Go/MPI course project. 4 inputs (standardised
// measurements), hidden layers of 30 and 20 sigmoid units, 3 sigmoid outputs, squared error
// against one-hot labels, plain SGD. 20% of each species is held out for accuracy (30 rows), the
// other 120 rows are the training set.
//
// Settings used: data_path (default data/iris.csv), dataset_size (≤ 120), seed, lr, batch_size.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/study/settings.h"

namespace harness {

class Workload;

inline constexpr double kIrisTestFraction = 0.2;

struct IrisData;

// The point's Iris data: data_path, or the CSV shipped with the harness. Throws ConfigError
// starting "data_path: ". (This and iris_mlp_train_samples need no LibTorch: iris_mlp_data.cpp.)
IrisData load_iris_for(const PointSettings& settings);
int64_t iris_mlp_train_samples(const PointSettings& settings);
std::unique_ptr<Workload> make_iris_mlp(const PointSettings& settings, int cuda_device);

}  // namespace harness
