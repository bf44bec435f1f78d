// The rank program's half of the workload table: each SGD workload's model and data, made by
// name. What the orchestrator may know of a workload is in registry.h, linked without LibTorch;
// the models need LibTorch, so they are made here, in harness_workloads.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "backends/device_staging.h"  // kNoCudaDevice
#include "harness/study/settings.h"

namespace harness {

class Workload;

struct WorkloadFactory {
  std::string_view name;  // as in workload_table()
  std::unique_ptr<Workload> (*make)(const PointSettings& settings, int cuda_device) = nullptr;
};

// One per workload of workload_table() that trains by SGD (Algorithm::kDataParallelSgd), in its
// order (checked by a unit test); K-means runs through kmeans_driver.h instead.
const std::vector<WorkloadFactory>& workload_factories();

// The SGD workload that `settings.workload` names, on this rank; `cuda_device` is the rank's GPU
// with device "cuda". Throws ConfigError for a name without a factory.
std::unique_ptr<Workload> make_workload(const PointSettings& settings, int cuda_device);

}  // namespace harness
