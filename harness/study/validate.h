// Checks, before anything is launched, that every point of an experiment can run here: names
// exist in the workload and backend tables, the device is built in and present, the data is
// readable and large enough, and whatever the kind, the backend and the workload refuse (their
// table entries say; with the GPUs the launcher knows of). Errors name the experiment file and the
// field the offending value came from.
#pragma once

#include <string>
#include <vector>

#include "harness/study/sweep.h"

namespace harness {

inline constexpr int64_t kMaxStepsPerPoint = 2'000'000;
inline constexpr int64_t kMaxLossValues = 10'000;

// What the launcher can give one point (launch/scheduler.h fills it in).
struct ResourceLimits {
  int max_ranks = 0;  // 0: no limit
  std::string why;    // "the local launcher runs at most 8 ranks per core, and this machine has 2"
  int max_nodes = 0;  // 0: no limit
  std::string nodes_why;  // "the local launcher runs every rank on this machine"
  // Whether each node's ranks see the GPUs that this machine's do (cuda_status().devices,
  // CUDA_VISIBLE_DEVICES respected): device "cuda" then needs a GPU here, and the backends that
  // need a GPU per rank (nccl) count this machine's. False: the ranks run on other nodes (SLURM
  // from a login node), whose GPUs are unknown before launch; only the build must have CUDA, and
  // the ranks check when they start.
  bool gpus_as_here = false;
};

// Where a setting's value for a point came from, for messages: "exp.json: sweep.ranks[2]", or
// "exp.json: settings.ranks" when it is not swept.
std::string setting_field(const Experiment& experiment, const Point& point, const std::string& key);

// Throws ConfigError ("file: sweep.backend[1]: unknown backend ...").
void validate_points(const Experiment& experiment, const std::vector<Point>& points,
                     const ResourceLimits& limits = {});

}  // namespace harness
