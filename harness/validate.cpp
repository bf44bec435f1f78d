#include "harness/validate.h"

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "backends/gloo_allreduce.h"
#include "backends/gradient_sync.h"
#include "harness/errors.h"
#include "workloads/registry.h"

namespace harness {
namespace {

// Where a setting's value for a point came from, for error messages.
std::string field_of(const Experiment& experiment, const std::string& key, const Json& value) {
  for (const auto& axis : experiment.sweep) {
    if (axis.key != key) continue;
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      if (axis.values[i] == value) return fmt::format("{}: sweep.{}[{}]", experiment.source_path, key, i);
    }
  }
  return fmt::format("{}: settings.{}", experiment.source_path, key);
}

std::string point_label(const Experiment& experiment, const Point& point) {
  return fmt::format("{}: point {} (ranks={}, batch_size={}, dataset_size={})",
                     experiment.source_path, point.id, point.settings.ranks,
                     point.settings.batch_size, point.settings.dataset_size);
}

}  // namespace

bool built_with_cuda() {
#ifdef HARNESS_WITH_CUDA
  return true;
#else
  return false;
#endif
}

void validate_points(const Experiment& experiment, const std::vector<Point>& points) {
  // Samples available per (workload, data file, seed): read each data set once.
  std::map<std::tuple<std::string, std::string, int64_t>, int64_t> available;
  for (const auto& point : points) {
    const PointSettings& s = point.settings;
    try {
      find_workload(s.workload);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", field_of(experiment, "workload", s.workload), error.what()));
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
      throw ConfigError(fmt::format(
          "{}: expected \"cpu\": {}, got \"cuda\"", field_of(experiment, "device", s.device),
          built_with_cuda() ? "the CUDA device path of the trainer is not written yet"
                            : "this build has no CUDA support (configure with "
                              "-DHARNESS_WITH_CUDA=ON on a machine with a CUDA toolkit and GPU)"));
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

    const auto key = std::make_tuple(s.workload, s.data_path, s.seed);
    if (available.count(key) == 0) {
      try {
        available[key] = find_workload(s.workload).available_train_samples(s);
      } catch (const ConfigError& error) {
        throw ConfigError(fmt::format("{}: {}", point_label(experiment, point), error.what()));
      }
    }
    const int64_t samples = available[key];
    if (s.dataset_size > samples) {
      throw ConfigError(fmt::format("{}: expected at most {} (the {} training samples), got {}",
                                    field_of(experiment, "dataset_size", s.dataset_size), samples,
                                    s.workload, s.dataset_size));
    }
    const int64_t used = s.dataset_size > 0 ? s.dataset_size : samples;
    const int workers = worker_layout(s, 0, s.ranks).workers;
    if (s.scaling == "strong" && s.batch_size % workers != 0) {
      throw ConfigError(fmt::format(
          "{}: batch_size: scaling \"strong\" splits the global batch {} evenly over {} training "
          "ranks; expected a multiple of {}",
          point_label(experiment, point), s.batch_size, workers, workers));
    }
    const int64_t global = global_batch(s, workers);
    if (global > used) {
      throw ConfigError(fmt::format(
          "{}: batch_size: the global batch of {} ({} training ranks × {}) exceeds the {} training "
          "samples, so no full step fits in an epoch",
          point_label(experiment, point), global, workers, per_rank_batch(s, workers), used));
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
