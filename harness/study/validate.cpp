#include "harness/study/validate.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <torch/cuda.h>

#include "backends/device_staging.h"
#include "backends/gloo_allreduce.h"
#include "backends/gradient_sync.h"
#include "harness/common/errors.h"
#include "workloads/registry.h"

namespace harness {
namespace {

// Where a setting's value for a point came from, for error messages.
std::string field_of(const Experiment& experiment, const std::string& key, const Json& value) {
  for (const auto& axis : experiment.sweep) {
    if (axis.key != key) continue;
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      if (axis.values[i] == value) return fmt::format("{}: {}[{}]", experiment.source_path, axis.path, i);
    }
  }
  return fmt::format("{}: settings.{}", experiment.source_path, key);
}

std::string point_label(const Experiment& experiment, const Point& point) {
  return fmt::format("{}: point {} (ranks={}, batch_size={}, dataset_size={})",
                     experiment.source_path, point.id, point.settings.ranks,
                     point.settings.batch_size, point.settings.dataset_size);
}

// Why `device: "cuda"` cannot run here, or "" when it can. The communication benchmark needs
// the CUDA path and a device; training also needs a LibTorch with CUDA (Debian's is CPU-only).
std::string cuda_problem(const std::string& kind) {
  const CudaStatus status = cuda_status();
  if (!status.usable) return status.reason;
  if (kind == "train" && !torch::cuda::is_available()) {
    return "training on \"cuda\" needs a LibTorch built with CUDA, and this one is CPU-only";
  }
  return "";
}

}  // namespace

void validate_points(const Experiment& experiment, const std::vector<Point>& points,
                     const Launcher* launcher) {
  // Sample limits per data source: read each data set once.
  std::map<std::string, SampleLimits> limits;
  for (const auto& point : points) {
    const PointSettings& s = point.settings;
    if (launcher != nullptr && s.ranks > launcher->max_ranks()) {
      throw ConfigError(fmt::format("{}: expected at most {} ranks ({}), got {}",
                                    field_of(experiment, "ranks", s.ranks), launcher->max_ranks(),
                                    launcher->max_ranks_reason(), s.ranks));
    }
    const WorkloadInfo* workload = nullptr;
    try {
      workload = &find_workload(s.workload);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", field_of(experiment, "workload", s.workload), error.what()));
    }
    if (s.kind == "train" && !workload->engines.empty() &&
        std::find(workload->engines.begin(), workload->engines.end(), s.engine) ==
            workload->engines.end()) {
      std::vector<std::string> quoted;
      for (const auto engine : workload->engines) quoted.push_back(fmt::format("\"{}\"", engine));
      throw ConfigError(fmt::format("{}: expected {} for workload {}, got \"{}\"",
                                    field_of(experiment, "engine", s.engine),
                                    fmt::join(quoted, " or "), s.workload, s.engine));
    }
    if (s.kind == "train" && s.engine == "blas" && s.device != "cpu") {
      throw ConfigError(fmt::format("{}: expected \"cpu\" with engine \"blas\", got \"{}\"",
                                    field_of(experiment, "device", s.device), s.device));
    }
    try {
      find_backend(s.backend);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", field_of(experiment, "backend", s.backend), error.what()));
    }
    if (s.backend == "gloo" && !gloo_available()) {
      throw ConfigError(fmt::format(
          "{}: backend \"gloo\" is not in this build (libgloo-dev was missing at configure "
          "time; install it with bash .ci/install-deps and configure again)",
          field_of(experiment, "backend", s.backend)));
    }
    if (s.device == "cuda") {
      const std::string problem = cuda_problem(s.kind);
      if (!problem.empty()) {
        throw ConfigError(fmt::format("{}: expected \"cpu\" on this build and machine: {}",
                                      field_of(experiment, "device", s.device), problem));
      }
    }

    if (s.kind == "comm") {
      // A communication benchmark has no workload or data; only its sizes need checking.
      if (s.comm_min_bytes > s.comm_max_bytes) {
        throw ConfigError(fmt::format(
            "{}: expected comm_min_bytes ({}) <= comm_max_bytes ({})",
            field_of(experiment, "comm_min_bytes", s.comm_min_bytes), s.comm_min_bytes,
            s.comm_max_bytes));
      }
      continue;
    }

    if (worker_layout(s, 0, s.ranks).index < 0 && s.ranks < 2) {
      throw ConfigError(fmt::format(
          "{}: ranks: backend \"ps\" without ps_server_trains needs at least 2 ranks (rank 0 only "
          "serves); expected ranks >= 2 or \"ps_server_trains\": true",
          point_label(experiment, point)));
    }

    // Everything the data's size, and the workloads' checks of test_size, can depend on.
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", s.workload, s.kmeans_data,
                                        s.image_size, s.data_path, s.seed, s.test_size);
    if (limits.count(key) == 0) {
      try {
        limits[key] = workload->train_samples(s);
      } catch (const ConfigError& error) {
        throw ConfigError(fmt::format("{}: {}", point_label(experiment, point), error.what()));
      }
    }
    const SampleLimits samples = limits[key];
    if (s.dataset_size > samples.most) {
      throw ConfigError(fmt::format(
          "{}: expected at most {} ({}), got {}", field_of(experiment, "dataset_size", s.dataset_size),
          samples.most,
          samples.most == samples.standard
              ? fmt::format("the {} training samples", s.workload)
              : fmt::format("the synthetic {} samples that fit in memory", s.workload),
          s.dataset_size));
    }
    const int64_t used = s.dataset_size > 0 ? s.dataset_size : samples.standard;
    if (workload->algorithm == Algorithm::kLloydKMeans) {
      if (s.device != "cpu") {
        throw ConfigError(fmt::format("{}: expected \"cpu\" for workload kmeans (it runs on the cpu), got \"{}\"",
                                      field_of(experiment, "device", s.device), s.device));
      }
      // No batches: every iteration is one pass over all points; `epochs` bounds the iterations.
      if (s.kmeans_k > used) {
        throw ConfigError(fmt::format("{}: expected at most {} clusters (the points used), got {}",
                                      field_of(experiment, "kmeans_k", s.kmeans_k), used, s.kmeans_k));
      }
      continue;
    }
    const int workers = worker_layout(s, 0, s.ranks).workers;
    if (s.scaling == "strong" && s.batch_size % workers != 0) {
      throw ConfigError(fmt::format(
          "{}: batch_size: scaling \"strong\" splits the global batch {} evenly over {} training "
          "ranks; expected a multiple of {}",
          point_label(experiment, point), s.batch_size, workers, workers));
    }
    if (s.workload == "resnet" && per_rank_batch(s, workers) < 2) {
      throw ConfigError(fmt::format(
          "{}: batch_size: resnet needs at least 2 samples per rank (BatchNorm's batch statistics "
          "over a 1x1 feature map), got {}",
          point_label(experiment, point), per_rank_batch(s, workers)));
    }
    const int64_t global = global_batch(s, workers);
    if (global > used) {
      throw ConfigError(fmt::format(
          "{}: batch_size: the global batch of {} ({} training ranks × {}) exceeds the {} training "
          "samples, so no full step fits in an epoch",
          point_label(experiment, point), global, workers, per_rank_batch(s, workers), used));
    }
    if (s.warmup_steps >= used / global) {
      throw ConfigError(fmt::format(
          "{}: expected fewer warm-up steps than the {} steps of the first epoch, got {}",
          field_of(experiment, "warmup_steps", s.warmup_steps), used / global, s.warmup_steps));
    }
    // Every step's timings are kept (and gathered on rank 0), so the step count is bounded.
    const int64_t steps = used / global * s.epochs;
    if (steps > kMaxStepsPerPoint) {
      throw ConfigError(fmt::format(
          "{}: epochs: expected at most {} steps per point, got {} epochs × {} steps = {}",
          point_label(experiment, point), kMaxStepsPerPoint, s.epochs, used / global, steps));
    }
  }
}

}  // namespace harness
