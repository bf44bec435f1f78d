// The workload name -> factory table. Free of LibTorch headers so the command line can validate
// names and data before launching anything.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "harness/settings.h"

namespace harness {

class Workload;

struct WorkloadInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help
  // Reads and checks the workload's data before launch and returns how many training samples
  // it has (before dataset_size). Throws ConfigError whose message starts with the offending
  // setting's key ("data_path: ...").
  int64_t (*available_train_samples)(const PointSettings& settings);
  std::unique_ptr<Workload> (*make)(const PointSettings& settings);
};

const std::vector<WorkloadInfo>& workload_table();
// Throws ConfigError listing the valid names when `name` is unknown.
const WorkloadInfo& find_workload(std::string_view name);

}  // namespace harness
