// iris_mlp's data as validation needs it, without LibTorch (iris_mlp.h).
#include "workloads/iris_mlp.h"

#include <string>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "workloads/iris_data.h"

namespace harness {

IrisData load_iris_for(const PointSettings& settings) {
  const std::string path = settings.data_path.empty() ? default_iris_path() : settings.data_path;
  try {
    return load_iris_csv(path);
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("data_path: ") + error.what());
  }
}

int64_t iris_mlp_train_samples(const PointSettings& settings) {
  const IrisData data = load_iris_for(settings);
  const IrisSplit split = split_iris(data, kIrisTestFraction, static_cast<uint64_t>(settings.seed));
  // The held-out rows are a fixed share of each species: a file too small for any leaves an
  // accuracy of 0 / 0.
  if (split.test.empty()) {
    throw ConfigError(fmt::format("data_path: {}: {} rows leave no held-out row ({:.0f}% of each species, rounded); "
                                  "expected at least 3 rows of a species",
                                  settings.data_path.empty() ? default_iris_path() : settings.data_path,
                                  data.rows(), 100 * kIrisTestFraction));
  }
  return static_cast<int64_t>(split.train.size());
}

}  // namespace harness
