#include "workloads/registry.h"

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/name_table.h"
#include "harness/study/settings.h"
#include "workloads/iris_mlp.h"
#include "workloads/kmeans.h"
#include "workloads/mnist_cnn.h"
#include "workloads/resnet.h"
#include "workloads/gpt.h"
#include "workloads/torchscript.h"

namespace harness {
namespace {

SampleLimits fixed(int64_t samples) { return {samples, samples}; }

SampleLimits iris_limits(const PointSettings& s) { return fixed(iris_mlp_train_samples(s)); }
SampleLimits mnist_limits(const PointSettings& s) { return fixed(mnist_cnn_train_samples(s)); }
SampleLimits resnet_limits(const PointSettings& s) {
  const int64_t most = resnet_max_images(s);
  // The synthetic held-out set is generated like the training set, so it has the same bound.
  if (s.test_size > most) {
    throw ConfigError(fmt::format(
        "test_size: expected at most {} (the synthetic resnet samples that fit in memory), got {}",
        most, s.test_size));
  }
  return {kDefaultSyntheticImages, most};
}
SampleLimits kmeans_limits(const PointSettings& s) {
  if (kmeans_options(s).data == "blobs") return {kDefaultBlobPoints, kMaxBlobPoints};
  return fixed(kmeans_available_points(s));
}

std::optional<SettingProblem> iris_check(const PointSettings& s, const PointShape& /*shape*/) {
  if (s.engine == "blas" && s.device != "cpu") {
    return SettingProblem{"device", fmt::format("expected \"cpu\" with engine \"blas\", got \"{}\"", s.device)};
  }
  return std::nullopt;
}

std::optional<SettingProblem> resnet_check(const PointSettings& /*s*/, const PointShape& shape) {
  if (shape.forward_batch < 2) {
    return SettingProblem{"", fmt::format("batch_size: resnet needs at least 2 samples per rank{} "
                                          "(BatchNorm's batch statistics over a 1x1 feature map), "
                                          "got {}",
                                          shape.forward_batch < shape.per_rank_batch ? " and micro-batch" : "",
                                          shape.forward_batch)};
  }
  return std::nullopt;
}

std::optional<SettingProblem> kmeans_check(const PointSettings& s, const PointShape& shape) {
  if (s.device != "cpu") {
    return SettingProblem{"device", fmt::format("expected \"cpu\" for workload kmeans (it runs on "
                                                "the cpu), got \"{}\"",
                                                s.device)};
  }
  const int k = kmeans_options(s).k;
  if (k > shape.samples) {
    return SettingProblem{"kmeans_k", fmt::format("expected at most {} clusters (the points used), got {}",
                                                  shape.samples, k)};
  }
  return std::nullopt;
}

// The chains' layers (workloads' layer_chain()): Iris's three linear layers (the blas engine's
// hand-written backward has none to cut), the CNN's four, ResNet's stem, blocks and head.
int iris_layers(const PointSettings& s) { return s.engine == "blas" ? 0 : 3; }
int mnist_layers(const PointSettings& /*s*/) { return 4; }
int resnet_layers(const PointSettings& s) { return resnet_options(s).depth == 50 ? 3 + 4 + 6 + 3 + 2 : 2 * 4 + 2; }

}  // namespace

const std::vector<WorkloadInfo>& workload_table() {
  static const std::vector<WorkloadInfo> table = {
      {.name = "iris_mlp",
       .summary = "Iris 4-30-20-3 sigmoid MLP, squared error on one-hot labels, plain SGD",
       .engines = {"torch", "blas"},
       .train_samples = iris_limits,
       .chain_layers = iris_layers,
       .check = iris_check},
      {.name = "mnist_cnn",
       .summary = "PyTorch MNIST example CNN (2 conv, 2 fc, no dropout) on MNIST-format data",
       .engines = {"torch"},
       .train_samples = mnist_limits,
       .chain_layers = mnist_layers},
      {.name = "resnet",
       .summary = "ResNet-18/50 (torchvision layout) on synthetic images, as Horovod's benchmark",
       .engines = {"torch"},
       .settings = resnet_setting_rows,
       .train_samples = resnet_limits,
       .meaningful_held_out = false,  // random labels: accuracy stays at chance
       .chain_layers = resnet_layers,
       .check = resnet_check},
      {.name = "torchscript",
       .summary = "your own network, exported from PyTorch with torch.jit.save; synthetic, Iris or MNIST data",
       .engines = {"torch"},
       .settings = torchscript_setting_rows,
       .train_samples = torchscript_limits,
       .chain_layers = nullptr,  // one scripted forward: no layers to cut stages between
       .check = torchscript_check},
      {.name = "gpt",
       .summary = "decoder-only transformer (GPT-2 layout, tied embedding); synthetic tokens or a byte-level text file",
       .engines = {"torch"},
       .settings = gpt_setting_rows,
       .train_samples = gpt_limits,
       .chain_layers = nullptr,  // the tied embedding is both the first layer and the last
       .check = gpt_check},
      {.name = "kmeans",
       .summary = "distributed K-means (Lloyd), sums and counts allreduced; Iris or Gaussian blobs",
       .engines = {},  // one implementation: no "engine" to choose
       .algorithm = Algorithm::kLloydKMeans,
       .settings = kmeans_setting_rows,
       .train_samples = kmeans_limits,
       .check = kmeans_check},
  };
  return table;
}

const WorkloadInfo& find_workload(std::string_view name) {
  return find_by_name(workload_table(), name, "workload");
}

std::string training_device_problem(std::string_view device) {
  if (device != "cuda") return "";
  // What CMake found of the LibTorch the rank program links (workloads/CMakeLists.txt): asked
  // here, where LibTorch is not loaded, so that validating an experiment costs no LibTorch start-up.
#ifndef HARNESS_LIBTORCH_WITH_CUDA
  return "training on \"cuda\" needs a LibTorch built with CUDA, and this one is CPU-only";
#else
  return "";
#endif
}

}  // namespace harness
