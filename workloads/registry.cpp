#include "workloads/registry.h"

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/name_table.h"
#include "workloads/iris_mlp.h"
#include "workloads/kmeans.h"
#include "workloads/mnist_cnn.h"
#include "workloads/resnet.h"

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
  if (s.kmeans_data == "blobs") return {kDefaultBlobPoints, kMaxBlobPoints};
  return fixed(kmeans_available_points(s));
}

}  // namespace

const std::vector<WorkloadInfo>& workload_table() {
  static const std::vector<WorkloadInfo> table = {
      {"iris_mlp", "Iris 4-30-20-3 sigmoid MLP, squared error on one-hot labels, plain SGD",
       {"torch", "blas"}, Algorithm::kDataParallelSgd, iris_limits, make_iris_mlp},
      {"mnist_cnn", "PyTorch MNIST example CNN (2 conv, 2 fc, no dropout) on MNIST-format data",
       {"torch"}, Algorithm::kDataParallelSgd, mnist_limits, make_mnist_cnn},
      {"resnet", "ResNet-18/50 (torchvision layout) on synthetic images, as Horovod's benchmark",
       {"torch"}, Algorithm::kDataParallelSgd, resnet_limits, make_resnet},
      {"kmeans", "distributed K-means (Lloyd), sums and counts allreduced; Iris or Gaussian blobs",
       {}, Algorithm::kLloydKMeans, kmeans_limits, nullptr},
  };
  return table;
}

const WorkloadInfo& find_workload(std::string_view name) {
  return find_by_name(workload_table(), name, "workload");
}

}  // namespace harness
