#include "harness/study/validate.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/registry.h"
#include "harness/common/errors.h"
#include "schemes/registry.h"
#include "workloads/registry.h"

namespace harness {
namespace {

std::string point_label(const Experiment& experiment, const Point& point) {
  return fmt::format("{}: point {} (ranks={}, batch_size={}, dataset_size={})",
                     experiment.source_path, point.id, point.settings.ranks,
                     point.settings.batch_size, point.settings.dataset_size);
}

[[noreturn]] void fail_at(const Experiment& experiment, const Point& point,
                          const SettingProblem& problem) {
  throw ConfigError(fmt::format("{}: {}",
                                problem.key.empty() ? point_label(experiment, point)
                                                    : setting_field(experiment, point, problem.key),
                                problem.message));
}

// A name looked up in its table; an unknown one is reported at its place in the file.
template <typename Lookup>
decltype(auto) named(const Experiment& experiment, const Point& point, const std::string& key,
                     Lookup lookup) {
  try {
    return lookup();
  } catch (const ConfigError& error) {
    throw ConfigError(fmt::format("{}: {}", setting_field(experiment, point, key), error.what()));
  }
}

void validate_comm_point(const Experiment& experiment, const Point& point) {
  const CommOptions comm = comm_options(point.settings);
  if (comm.min_bytes > comm.max_bytes) {
    fail_at(experiment, point,
            {"comm_min_bytes", fmt::format("expected comm_min_bytes ({}) <= comm_max_bytes ({})",
                                           comm.min_bytes, comm.max_bytes)});
  }
}

// Sample limits per data source, so that a sweep reads each data set once.
using LimitsCache = std::map<std::string, SampleLimits>;

void validate_training_point(const Experiment& experiment, const Point& point,
                             const WorkloadInfo& workload,
                             LimitsCache& cache) {
  const PointSettings& s = point.settings;
  // Everything the data's size, and the workloads' checks of test_size, can depend on (the owned
  // settings include the workload's own, such as the synthetic image size).
  const std::string key = fmt::format("{}|{}|{}|{}|{}", s.workload, s.data_path, s.seed,
                                      s.test_size, s.options.dump());
  if (cache.count(key) == 0) {
    try {
      cache[key] = workload.train_samples(s);
    } catch (const ConfigError& error) {
      throw ConfigError(fmt::format("{}: {}", point_label(experiment, point), error.what()));
    }
  }
  const SampleLimits samples = cache[key];
  if (s.dataset_size > samples.most) {
    fail_at(experiment, point,
            {"dataset_size",
             fmt::format("expected at most {} ({}), got {}", samples.most,
                         samples.most == samples.standard
                             ? fmt::format("the {} training samples", s.workload)
                             : fmt::format("the synthetic {} samples that fit in memory", s.workload),
                         s.dataset_size)});
  }
  PointShape shape;
  shape.samples = s.dataset_size > 0 ? s.dataset_size : samples.standard;
  shape.workers = worker_layout(s, 0, s.ranks).workers;
  shape.per_rank_batch = per_rank_batch(s, shape.workers);
  shape.forward_batch = shape.per_rank_batch / micro_batches(s);
  const bool batched = workload.algorithm == Algorithm::kDataParallelSgd;
  if (batched && s.scaling == "strong" && s.batch_size % shape.workers != 0) {
    fail_at(experiment, point,
            {"", fmt::format("batch_size: scaling \"strong\" splits the global batch {} evenly over "
                             "{} training ranks; expected a multiple of {}",
                             s.batch_size, shape.workers, shape.workers)});
  }
  if (workload.check != nullptr) {
    if (const auto problem = workload.check(s, shape)) fail_at(experiment, point, *problem);
  }
  if (!batched && s.timeline) {
    fail_at(experiment, point,
            {"timeline", fmt::format("expected false for workload {}: its loop is not traced", s.workload)});
  }
  if (!batched) {
    // An iteration is one pass over all points; `epochs` bounds them, and warm-up ones are untimed.
    if (s.warmup_steps >= s.epochs) {
      fail_at(experiment, point,
              {"warmup_steps", fmt::format("expected fewer warm-up iterations than the {} iterations (epochs) of "
                                           "workload {}, got {}",
                                           s.epochs, s.workload, s.warmup_steps)});
    }
    return;
  }

  const int64_t global = global_batch(s, shape.workers);
  if (global > shape.samples) {
    fail_at(experiment, point,
            {"", fmt::format("batch_size: the global batch of {} ({} training ranks × {}) exceeds the "
                             "{} training samples, so no full step fits in an epoch",
                             global, shape.workers, shape.per_rank_batch, shape.samples)});
  }
  const int64_t steps_per_epoch = shape.samples / global;
  if (s.warmup_steps >= steps_per_epoch) {
    fail_at(experiment, point,
            {"warmup_steps", fmt::format("expected fewer warm-up steps than the {} steps of the first "
                                         "epoch, got {}",
                                         steps_per_epoch, s.warmup_steps)});
  }
  // Every step's timings are kept (and gathered on rank 0), so the step count is bounded.
  const int64_t steps = steps_per_epoch * s.epochs;
  if (steps > kMaxStepsPerPoint) {
    fail_at(experiment, point,
            {"", fmt::format("epochs: expected at most {} steps per point, got {} epochs × {} steps = {}",
                             kMaxStepsPerPoint, s.epochs, steps_per_epoch, steps)});
  }
  // The loss curve is kept in the record: bounded too.
  const int64_t loss_values = (steps + loss_window_steps(s, steps) - 1) / loss_window_steps(s, steps);
  if (loss_values > kMaxLossValues) {
    fail_at(experiment, point,
            {"loss_every", fmt::format("expected at most {} loss values per point, got {} steps / {} = {} (0 "
                                       "keeps about {})",
                                       kMaxLossValues, steps, s.loss_every, loss_values, kLossValuesPerPoint)});
  }
}

// The pipeline's settings, set to anything but their defaults on a point that does not run it: a
// stage count on a comm point or under sync would be silently ignored, and the point measured would
// not be the one asked for. At their defaults they change nothing anywhere, so a zip of schemes can
// name them for every point (experiments/pipeline.json). (Other schemes' settings only warn when no
// point reads them.)
std::optional<SettingProblem> settings_of_another_scheme(const PointSettings& s) {
  if (s.kind == Kind::kTrain && s.scheme == "pipeline") return std::nullopt;
  const SchemeInfo& pipeline = find_scheme("pipeline");
  static const Json defaults = to_json(PointSettings{});
  const Json values = to_json(s);
  for (const SettingRow& row : pipeline.settings()) {
    const std::string key(row.key);
    if (values[key] == defaults[key]) continue;
    return SettingProblem{key, s.kind == Kind::kComm
                                   ? std::string("expected no pipeline setting on a comm point: it trains no model")
                                   : fmt::format("expected scheme \"pipeline\" for a pipeline setting, got scheme "
                                                 "\"{}\" (sweep the pipeline's settings with it in a zip, or "
                                                 "exclude the other schemes' points)",
                                                 s.scheme)};
  }
  return std::nullopt;
}

}  // namespace

std::string setting_field(const Experiment& experiment, const Point& point, const std::string& key) {
  const Json value = to_json(point.settings)[key];
  for (const auto& axis : experiment.sweep) {
    if (axis.key != key) continue;
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      // The axis that `use_builds` added has no list in the file: its path is "builds".
      if (axis.values[i] == value) {
        return axis.path == "builds" ? fmt::format("{}: builds.{}", experiment.source_path, value.get<std::string>())
                                     : fmt::format("{}: {}[{}]", experiment.source_path, axis.path, i);
      }
    }
  }
  return fmt::format("{}: settings.{}", experiment.source_path, key);
}

void validate_points(const Experiment& experiment, const std::vector<Point>& points,
                     const ResourceLimits& limits) {
  LimitsCache cache;
  for (const auto& point : points) {
    const PointSettings& s = point.settings;
    if (limits.max_ranks > 0 && s.ranks > limits.max_ranks) {
      fail_at(experiment, point,
              {"ranks", fmt::format("expected at most {} ranks ({}), got {}", limits.max_ranks,
                                    limits.why, s.ranks)});
    }
    if (s.nodes > s.ranks) {
      fail_at(experiment, point,
              {"nodes", fmt::format("expected at most one node per rank ({} ranks), got {}", s.ranks, s.nodes)});
    }
    if (limits.max_nodes > 0 && s.nodes > limits.max_nodes) {
      fail_at(experiment, point,
              {"nodes", fmt::format("expected at most {} ({}), got {}", limits.max_nodes,
                                    limits.nodes_why, s.nodes)});
    }
    // Only a delay reads its rank: a ranks sweep from 1 with the delay off elsewhere is fine.
    if (s.kind == Kind::kTrain && s.inject_compute_delay_ms > 0 && s.inject_compute_delay_rank >= s.ranks) {
      fail_at(experiment, point,
              {"inject_compute_delay_rank",
               fmt::format("expected a rank below ranks ({}), got {}", s.ranks, s.inject_compute_delay_rank)});
    }
    if (s.kind == Kind::kTrain && s.backend == "ps" && s.inject_compute_delay_ms > 0 &&
        s.inject_compute_delay_rank == 0 && !s.option("ps_server_trains", false)) {
      // The serving rank computes nothing: its delay would never happen.
      fail_at(experiment, point,
              {"inject_compute_delay_rank",
               "expected a training rank (1 or above): with backend \"ps\", rank 0 only serves and computes nothing "
               "(unless \"ps_server_trains\": true)"});
    }
    if (s.ranks_per_node > 0 && s.ranks_per_node * s.nodes != s.ranks) {
      fail_at(experiment, point,
              {"ranks_per_node",
               fmt::format("expected nodes × ranks_per_node = ranks, got {} × {} for {} ranks",
                           s.nodes, s.ranks_per_node, s.ranks)});
    }
    const WorkloadInfo& workload = named(experiment, point, "workload", [&]() -> const WorkloadInfo& {
      return find_workload(s.workload);
    });
    if (s.kind == Kind::kTrain && !workload.engines.empty() &&
        std::find(workload.engines.begin(), workload.engines.end(), s.engine) == workload.engines.end()) {
      std::vector<std::string> quoted;
      for (const auto engine : workload.engines) quoted.push_back(fmt::format("\"{}\"", engine));
      fail_at(experiment, point,
              {"engine", fmt::format("expected {} for workload {}, got \"{}\"",
                                     fmt::join(quoted, " or "), s.workload, s.engine)});
    }
    if (s.kind == Kind::kTrain && s.overlap && s.engine == "blas") {
      // Its backward bypasses autograd: no hook hands a bucket over before backward ends.
      fail_at(experiment, point,
              {"overlap", "expected false with engine \"blas\": its backward does not run through autograd, so no "
                          "gradient is ready before it ends and nothing can overlap it"});
    }
    const BackendInfo& backend = named(experiment, point, "backend", [&]() -> const BackendInfo& {
      return find_backend(s.backend);
    });
    // The device first: where no GPU can be used, that is the reason, whatever the backend. Where
    // the ranks run on other nodes (SLURM from a login node without a GPU), only the build must
    // have CUDA: the nodes' GPUs are asked of the scheduler, and a rank without one says so.
    const CudaStatus cuda = s.device == "cuda" ? cuda_status() : CudaStatus{};
    if (s.device == "cuda") {
      std::string problem = !cuda.built || limits.gpus_as_here ? cuda.reason : "";
      if (problem.empty() && s.kind == Kind::kTrain) problem = training_device_problem(s.device);
      if (!problem.empty()) {
        fail_at(experiment, point, {"device", "expected \"cpu\" on this build and machine: " + problem});
      }
    }
    if (backend.unavailable_reason != nullptr) {
      if (const std::string reason = backend.unavailable_reason(); !reason.empty()) {
        fail_at(experiment, point, {"backend", reason});
      }
    }
    if (backend.problem != nullptr) {
      BackendOptions options = backend_options(s);
      if (cuda.usable && limits.gpus_as_here) options.gpus_per_node = cuda.devices;
      if (const std::string problem = backend.problem(options); !problem.empty()) {
        fail_at(experiment, point, {"", problem});
      }
    }
    const SchemeInfo& scheme = named(experiment, point, "scheme", [&]() -> const SchemeInfo& {
      return find_scheme(s.scheme);
    });
    if (s.kind == Kind::kComm && s.scheme != kDefaultScheme) {
      fail_at(experiment, point,
              {"scheme", fmt::format("expected \"{}\" for a comm point: it measures the backend alone and trains "
                                     "nothing, got \"{}\"",
                                     kDefaultScheme, s.scheme)});
    }
    if (const auto problem = settings_of_another_scheme(s)) fail_at(experiment, point, *problem);
    if (s.kind == Kind::kTrain && scheme.check != nullptr) {
      if (const auto problem = scheme.check(s)) fail_at(experiment, point, *problem);
    }
    if (s.target && s.kind == Kind::kComm) {
      fail_at(experiment, point, {"target", "expected null for a comm point: it trains no model"});
    }
    if (s.target && s.kind == Kind::kTrain && s.target->metric != "train_loss" &&
        !find_workload(s.workload).meaningful_held_out) {
      fail_at(experiment, point,
              {"target", fmt::format("expected the metric \"train_loss\" for workload {}: its held-out labels are "
                                     "random, so {} means nothing, got \"{}\"",
                                     s.workload, s.target->metric, s.target->metric)});
    }
    switch (s.kind) {
      case Kind::kComm:
        validate_comm_point(experiment, point);  // no workload or data; only its sizes
        break;
      case Kind::kTrain:
        validate_training_point(experiment, point, workload, cache);
        break;
    }
  }
}

}  // namespace harness
