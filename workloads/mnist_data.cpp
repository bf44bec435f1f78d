// mnist_cnn's files as validation needs them, without LibTorch (mnist_data.h).
#include "workloads/mnist_data.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "workloads/idx_reader.h"
#include "workloads/mnist_cnn.h"

namespace harness {
namespace {

std::string data_directory(const PointSettings& settings) {
  return settings.data_path.empty() ? kDefaultMnistDirectory : settings.data_path;
}

// "<dir>/<name>" or "<dir>/<name>.gz", whichever exists.
std::string idx_file(const PointSettings& settings, const std::string& name) {
  const std::filesystem::path directory = data_directory(settings);
  for (const auto& candidate : {directory / name, directory / (name + ".gz")}) {
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  throw ConfigError(fmt::format(
      "data_path: {}: no {} or {}.gz (expected a directory of MNIST-format IDX files; Debian's "
      "Fashion-MNIST is in package dataset-fashion-mnist)",
      directory.string(), name, name));
}

}  // namespace

MnistFiles mnist_files(const PointSettings& settings, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  return {idx_file(settings, prefix + "-images-idx3-ubyte"),
          idx_file(settings, prefix + "-labels-idx1-ubyte")};
}

int64_t mnist_checked_count(const MnistFiles& split) {
  const auto images = read_idx_shape(split.images);
  if (images.size() != 3 || images[1] != 28 || images[2] != 28) {
    throw ConfigError(fmt::format("data_path: {}: expected images of N × 28 × 28", split.images));
  }
  // The labels whole (one byte each: 60 KB for the training set), as the ranks read them: a label
  // out of range would fail every point of a sweep one by one.
  const IdxArray labels = read_idx(split.labels);
  if (labels.shape.size() != 1 || labels.shape[0] != images[0]) {
    throw ConfigError(fmt::format("data_path: {}: expected {} labels to match {}", split.labels,
                                  images[0], split.images));
  }
  const auto out_of_range = std::find_if(labels.data.begin(), labels.data.end(), [](uint8_t label) { return label > 9; });
  if (out_of_range != labels.data.end()) {
    throw ConfigError(fmt::format("data_path: {}: the label of item {} is above 9, expected a class 0..9", split.labels,
                                  out_of_range - labels.data.begin()));
  }
  return images[0];
}

int64_t mnist_cnn_train_samples(const PointSettings& settings) {
  const int64_t train = mnist_checked_count(mnist_files(settings, true));
  const int64_t test = mnist_checked_count(mnist_files(settings, false));
  if (settings.test_size > test) {
    throw ConfigError(fmt::format("test_size: expected at most {} (the held-out images), got {}",
                                  test, settings.test_size));
  }
  return train;
}

}  // namespace harness
