// The workload name -> factory table. Free of LibTorch headers so the command line can validate
// names and data before launching anything.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

class Workload;

// How a workload trains: data-parallel SGD through the Workload interface and the trainer, or
// Lloyd's iterations through harness/kmeans_driver.h.
enum class Algorithm { kDataParallelSgd, kLloydKMeans };

// Training samples a point can have: `standard` with dataset_size 0, at most `most` by setting.
// Equal for a fixed data set; synthetic ones have a default size and a memory bound.
struct SampleLimits {
  int64_t standard = 0;
  int64_t most = 0;
};

struct WorkloadInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help
  std::vector<std::string_view> engines;  // valid "engine" values, the default first; empty = none
  Algorithm algorithm;
  // Reads and checks the workload's data before launch. Throws ConfigError whose message
  // starts with the offending setting's key ("data_path: ...").
  SampleLimits (*train_samples)(const PointSettings& settings);
  // The SGD workload (null for kLloydKMeans).
  std::unique_ptr<Workload> (*make)(const PointSettings& settings);
};

const std::vector<WorkloadInfo>& workload_table();
// Throws ConfigError listing the valid names when `name` is unknown.
const WorkloadInfo& find_workload(std::string_view name);

}  // namespace harness
