#include "workloads/mnist_tensors.h"

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "workloads/idx_reader.h"
#include "workloads/mnist_data.h"

namespace harness {
namespace {

torch::Tensor image_tensor(const IdxArray& images) {
  const int64_t count = images.shape[0];
  auto bytes = torch::from_blob(const_cast<uint8_t*>(images.data.data()), {count, 1, 28, 28}, torch::kUInt8);
  return bytes.to(torch::kFloat32).div_(255.0F);
}

torch::Tensor label_tensor(const IdxArray& labels, const std::string& path) {
  for (const uint8_t label : labels.data) {
    if (label > 9) throw ConfigError(fmt::format("{}: label {} is not a class 0..9", path, label));
  }
  return torch::from_blob(const_cast<uint8_t*>(labels.data.data()), {labels.shape[0]}, torch::kUInt8)
      .to(torch::kInt64);
}

}  // namespace

MnistTensors load_mnist_tensors(const PointSettings& settings) {
  const MnistFiles train = mnist_files(settings, true);
  const MnistFiles test = mnist_files(settings, false);
  const int64_t train_count = settings.dataset_size > 0 ? settings.dataset_size : 0;
  const int64_t test_count = settings.test_size > 0 ? settings.test_size : 0;
  MnistTensors tensors;
  tensors.train_images = image_tensor(read_idx(train.images, train_count));
  tensors.train_labels = label_tensor(read_idx(train.labels, train_count), train.labels);
  tensors.test_images = image_tensor(read_idx(test.images, test_count));
  tensors.test_labels = label_tensor(read_idx(test.labels, test_count), test.labels);
  // Standardise with the training images' statistics (the same on every rank).
  const double mean = tensors.train_images.mean().item<double>();
  const double deviation = tensors.train_images.std().item<double>();
  tensors.train_images.sub_(mean).div_(deviation);
  tensors.test_images.sub_(mean).div_(deviation);
  return tensors;
}

}  // namespace harness
