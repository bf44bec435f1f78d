// A trained model's parameters as one vector, and the distances the equality tests of the training
// schemes measure between two of them (tests/rank/*_test.cpp).
#pragma once

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "workloads/workload.h"

namespace harness::test {

// Every parameter's values in logical order (channels-last ones too), one after the other.
inline std::vector<float> flattened_parameters(Workload& workload) {
  std::vector<float> flat;
  for (const auto& parameter : workload.parameters()) {
    const torch::Tensor values = parameter.to(torch::kCPU).contiguous();  // a GPU's too
    flat.insert(flat.end(), values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
  }
  return flat;
}

// ||a − b|| / ||b||: the relative error of the parameter vector as a whole. (Element by element,
// parameters that end near zero would turn float rounding, which differs with the summation order
// inside LibTorch's kernels, into large ratios.)
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double difference = 0;
  double norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double delta = static_cast<double>(a[i]) - b[i];
    difference += delta * delta;
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(difference / std::max(norm, 1e-30));
}

// The largest difference of one element.
inline float largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) largest = std::max(largest, std::abs(a[i] - b[i]));
  return largest;
}

}  // namespace harness::test
