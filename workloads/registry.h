// The workload table: what the rest of the harness may know about a workload, by name: its
// engines, the settings it owns, how much data a point can have and what it refuses. Free of
// LibTorch headers, and linked without LibTorch (harness_workload_table), so the orchestrator
// validates experiments with it and never loads LibTorch. The models themselves are made through
// factories.h, the rank program's half.
//
// Adding a workload = a file pair in this folder (its data and settings in a file without
// LibTorch) + an entry in registry.cpp + one in factories.cpp (a test checks that both tables
// agree) + CMake lines + a test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/study/setting_row.h"

namespace harness {

struct PointSettings;

// How a workload trains: data-parallel SGD through the Workload interface and the trainer, or
// Lloyd's iterations through kmeans_driver.h (no batches: an iteration is a pass over the data).
enum class Algorithm { kDataParallelSgd, kLloydKMeans };

// Training samples a point can have: `standard` with dataset_size 0, at most `most` by setting.
// Equal for a fixed data set; synthetic ones have a default size and a memory bound.
struct SampleLimits {
  int64_t standard = 0;
  int64_t most = 0;
};

// A point as validation sees it when it asks the workload.
struct PointShape {
  int64_t samples = 0;         // training samples used
  int workers = 1;             // ranks that train
  int64_t per_rank_batch = 0;  // samples per training rank per step
  int64_t forward_batch = 0;   // samples per forward pass: per_rank_batch, or a pipeline's micro-batch
};

// Something a point asks that the workload cannot do, found before launch.
struct SettingProblem {
  std::string key;      // the setting at fault (shown at its value in the file); "" = the point
  std::string message;  // "expected ..., got ..." at a key; a sentence for the point
};

struct WorkloadInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help
  std::vector<std::string_view> engines;  // valid "engine" values, the default first; empty = none
  Algorithm algorithm = Algorithm::kDataParallelSgd;
  // The settings rows this workload owns (null: none).
  std::vector<SettingRow> (*settings)() = nullptr;
  // Reads and checks the workload's data before launch. Throws ConfigError whose message
  // starts with the offending setting's key ("data_path: ...").
  SampleLimits (*train_samples)(const PointSettings& settings) = nullptr;
  // Whether its held-out loss and accuracy mean anything (false: random held-out labels, which a
  // target may not name).
  bool meaningful_held_out = true;
  // The layers of its LayerChain (workload.h) that pipeline stages are cut from; 0: the network
  // cannot be split (null: never).
  int (*chain_layers)(const PointSettings& settings) = nullptr;
  // What else this workload refuses for a point (null: nothing).
  std::optional<SettingProblem> (*check)(const PointSettings& settings, const PointShape& shape) = nullptr;
};

const std::vector<WorkloadInfo>& workload_table();
// Throws ConfigError listing the valid names when `name` is unknown.
const WorkloadInfo& find_workload(std::string_view name);

// Why workloads cannot train on `device` with the LibTorch of this build ("cuda" with a CPU-only
// LibTorch), or "". Whether this machine has a GPU is cuda_status()'s (backends/registry.h).
std::string training_device_problem(std::string_view device);

}  // namespace harness
