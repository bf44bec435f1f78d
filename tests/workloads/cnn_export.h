// The shipped TorchScript export of the harness's CNN (data/models/mnist_cnn.pt) given the built-in
// mnist_cnn's initial weights, for the tests that train both and compare (tests/workloads,
// tests/rank). The built-in CNN flattens its pooled activations in (h, w, c) order (mnist_cnn.cpp
// says why), the export, as PyTorch code does, in (c, h, w): fc1's columns are permuted to match,
// so that both compute the same function.
#pragma once

#include <torch/script.h>

#include <filesystem>
#include <string>

#include "harness/study/settings.h"
#include "workloads/factories.h"
#include "workloads/workload.h"

namespace harness::test {

inline std::filesystem::path shipped_model(const std::string& name) {
  return std::filesystem::path(HARNESS_SOURCE_DIR) / "data" / "models" / name;
}

// Saves to `out` the export with the weights mnist_cnn starts from under `settings` (its seed).
inline void save_cnn_export_with_builtin_weights(PointSettings settings, const std::filesystem::path& out) {
  settings.workload = "mnist_cnn";
  settings.dataset_size = 4;  // only the weights are wanted
  settings.test_size = 4;
  const auto builtin = make_workload(settings, kNoCudaDevice);
  torch::jit::Module module = torch::jit::load(shipped_model("mnist_cnn.pt").string());
  const std::vector<torch::Tensor> weights = builtin->parameters();
  std::size_t index = 0;
  torch::NoGradGuard no_grad;
  for (const auto& parameter : module.named_parameters()) {
    torch::Tensor source = weights.at(index++);
    if (parameter.name == "fc1.weight") {
      source = source.view({128, 12, 12, 64}).permute({0, 3, 1, 2}).reshape({128, 9216});
    }
    parameter.value.copy_(source);
  }
  module.save(out.string());
}

}  // namespace harness::test
