// The settings of one point of an experiment: everything a rank needs to run one configuration.
// An experiment file fixes some of them and sweeps others; each key of its "settings" and "sweep"
// objects is a row of the settings table, which is the single source for parsing, --help and
// schema.json. The table is assembled from the settings every point has (below) and the rows that
// each kind, backend and workload owns for itself (kind.h, backends/registry.h,
// workloads/registry.h); the values of those live in `options` and are read through the owner's
// typed view (comm_options(), resnet_options(), ...).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend_options.h"
#include "harness/common/json.h"
#include "harness/study/kind.h"
#include "harness/study/setting_row.h"

namespace harness {

// The longest time limit a point may have, 365 days: SLURM counts limits in 32-bit minutes and
// a cluster's longest partition is far below this, so anything above is a typo (2e11), not a plan.
inline constexpr double kMaxTimeLimitS = 365.0 * 24 * 3600;
inline constexpr const char* kTimeLimitExpected = "a positive number of seconds up to 31536000 (365 days)";

// staging_chunk_bytes' default: the staging's own chunk (kStagingChunkFloats, checked where both
// are seen).
inline constexpr int64_t kDefaultStagingChunkBytes = int64_t{4} << 20;

// A training point's accuracy target, for its time to accuracy (MLPerf's time to train; docs/
// schemes.md#time-to-target): the first epoch after which `metric`, one of an epoch record's
// fields, reaches `value` (test_accuracy: at least it; a loss: at most it).
struct TrainingTarget {
  std::string metric;  // "train_loss", "test_loss" or "test_accuracy"
  double value = 0;
  bool operator==(const TrainingTarget&) const = default;
};
inline constexpr std::array<std::string_view, 3> kTargetMetrics = {"train_loss", "test_loss", "test_accuracy"};

struct PointSettings {
  Kind kind = Kind::kTrain;
  std::string workload = "iris_mlp";
  // "torch": LibTorch modules and autograd; "blas": the workload's hand-written forward and
  // backward over OpenBLAS (the workload's table entry lists the engines it has).
  std::string engine = "torch";
  std::string backend = "allreduce";
  // How the ranks train together (schemes/registry.h): "sync", "local_sgd". The backend moves and
  // sums what the scheme hands it.
  std::string scheme = "sync";
  std::string device = "cpu";
  int ranks = 1;
  int nodes = 1;           // machines the ranks are spread over
  int ranks_per_node = 0;  // 0: as the launcher places them (block distribution)
  // Samples per step: each training rank's (scaling "weak") or all of them together ("strong").
  int batch_size = 4;
  // "weak": every training rank takes batch_size samples per step, so the global batch grows
  // with the ranks; "strong": the global batch is batch_size, split evenly over the training ranks.
  std::string scaling = "weak";
  int64_t dataset_size = 0;   // training samples used; 0 = the workload's whole training set
  int64_t test_size = 0;      // held-out samples evaluated after each epoch; 0 = all
  int epochs = 10;
  double lr = 0.01;
  // "linear": the learning rate is lr × global batch / lr_reference_batch (Goyal et al., "Accurate,
  // Large Minibatch SGD"), reached by a linear ramp from lr over warmup_epochs.
  std::string lr_scaling = "none";
  int lr_reference_batch = 0;  // 0 = the per-rank batch (so one rank keeps lr)
  double warmup_epochs = 0;
  int64_t seed = 42;
  // The first warmup_steps steps train but are left out of every time and throughput (they
  // include allocation and connection set-up); they must fit in the first epoch.
  int warmup_steps = 0;
  // The training loss is kept as its mean over every loss_every steps (all ranks), so that even a
  // one-epoch study has a loss curve; 0 = about kLossValuesPerPoint values per point.
  int loss_every = 0;
  int threads_per_rank = 0;   // LibTorch/OpenBLAS threads per rank; 0 = cores / ranks (at least 1)
  double timeout_s = 600;     // wall-clock limit of the point's whole job; at most kMaxTimeLimitS
  std::string data_path;      // "" = the workload's default data
  double bucket_mb = 25;      // gradients are reduced in buckets of about this many MiB (as DDP)
  bool overlap = false;       // reduce each bucket during backward, as soon as it is complete
  // Device "cuda", a backend that reduces host memory: buffers above this many bytes are staged
  // through pinned host memory in pipelined chunks of this size (kStagingChunkFloats floats by
  // default, backends/device_staging.h).
  int64_t staging_chunk_bytes = kDefaultStagingChunkBytes;
  // Fault injection: every backend call waits this long first (backends/injected_delay.h), so
  // that users can check that their regression gate fires. Not part of a point's identity for
  // `harness check`, which compares a run with a delay to the same points without.
  double inject_comm_delay_us = 0;
  // Fault injection: rank inject_compute_delay_rank sleeps inject_compute_delay_ms inside every
  // step's compute, a straggler on purpose, so that users can check that the results name it
  // (results/stragglers.h).
  double inject_compute_delay_ms = 0;
  int inject_compute_delay_rank = 0;
  // Rank 0 writes a Chrome trace of a bounded sample of steps (harness/rank/timeline.h).
  bool timeline = false;
  // When the model first reached this, recorded with every epoch (measurements' time_to_target).
  std::optional<TrainingTarget> target;
  // Which harness build's rank program runs the point: a name of the experiment's "builds"
  // (study/builds.h); "" = the running harness. Only the orchestrator reads it: the worker is
  // the build itself.
  std::string build;
  // The settings that a kind, a backend or a workload owns, by key, as their rows normalised them;
  // a key that was not set takes its row's default.
  Json options = Json::object();

  // The value of an owned setting, or `fallback` (the owner's default) when it was not set.
  template <typename T>
  T option(std::string_view key, T fallback) const {
    const auto found = options.find(std::string(key));
    return found == options.end() ? fallback : found->template get<T>();
  }
};

// The staging chunk in floats, as DeviceStagedSync takes it.
inline std::size_t staging_chunk_floats(const PointSettings& settings) {
  return static_cast<std::size_t>(settings.staging_chunk_bytes) / sizeof(float);
}

// A row whose value lives in PointSettings::options: a setting that a kind, a backend or a
// workload owns (comm_iterations, ps_server_trains, resnet_depth). `normalise` checks a value and
// returns it as records store it (throwing ConfigError naming `where`); `fallback` is the default.
// Inline, so that the owners define their rows without linking the study.
inline SettingRow owned_setting(std::string_view key, std::string_view expected,
                                std::string_view help, std::string_view json_schema,
                                Json fallback,
                                std::function<Json(const Json& value, const std::string& where)> normalise) {
  return {key, expected, help, json_schema,
          [key, normalise](PointSettings& settings, const Json& value, const std::string& where) {
            settings.options[std::string(key)] = normalise(value, where);
          },
          [key, fallback](const PointSettings& settings) {
            const auto found = settings.options.find(std::string(key));
            return found == settings.options.end() ? fallback : *found;
          }};
}

// Every key an experiment may set, in the order records and tables print them.
const std::vector<SettingRow>& setting_table();

// Sets one setting from a JSON value. `where` prefixes the error ("exp.json: sweep.ranks[2]").
// Throws ConfigError naming `where`, the expected form and the value found.
void apply_setting(PointSettings& settings, std::string_view key, const Json& value,
                   const std::string& where);

// Every key with its value, in table order: the canonical form records store and points compare.
Json to_json(const PointSettings& settings);
// Whether `settings` has every value of `values` (an object of normalised setting values, as a
// baseline or check.against names them).
bool has_values(const PointSettings& settings, const Json& values);
// Reads a JSON object written by to_json (every key optional). Throws ConfigError.
PointSettings settings_from_json(const Json& object, const std::string& where);

// Which ranks compute gradients: all of them, except rank 0 where the backend's rank 0 only
// serves (the parameter server without ps_server_trains), and ranks 0 to ps_servers-1 under
// scheme async_ps.
struct WorkerLayout {
  int workers = 1;  // ranks that train
  int index = 0;    // this rank's position among them; -1 when it does not train
};
WorkerLayout worker_layout(const PointSettings& settings, int rank, int world_size);

// What the point's backend may know of it: its kind, ranks and their placement, device, whether
// its workload keeps its sums in host memory, injected delay and the values of the settings that
// backend owns (backends/backend_options.h). The GPUs per node stay unknown: the launcher knows
// them (validate.h's ResourceLimits).
BackendOptions backend_options(const PointSettings& settings);

// Samples each training rank takes per step, and all of them together.
int64_t per_rank_batch(const PointSettings& settings, int workers);
int64_t global_batch(const PointSettings& settings, int workers);

// The learning rate after `epochs_done` epochs (fractional: 1.5 = halfway through the second),
// with lr_scaling and warmup applied.
double learning_rate(const PointSettings& settings, int workers, double epochs_done);

// Steps per value of the loss curve: loss_every, or when it is 0 the total steps over
// kLossValuesPerPoint (at least 1).
inline constexpr int64_t kLossValuesPerPoint = 100;
int64_t loss_window_steps(const PointSettings& settings, int64_t total_steps);

// The settings that a point with `settings` does not read, whatever their values: those owned by
// other backends and workloads (resnet_depth for iris_mlp), by the other kind (comm_iterations
// when training), inject_compute_delay_rank without a delay, and test_size where there is no
// held-out set to size (iris_mlp's is fixed, kmeans has none, comm trains nothing). Two points
// that differ only in these measure the same thing.
std::vector<std::string> settings_not_read(const PointSettings& settings);

// `settings` without those that only choose what is observed (timeline, loss_every, target): what a run
// measures is the same with or without them, so comparisons and predictions ignore them.
PointSettings without_observation(PointSettings settings);

// Threads each rank uses: threads_per_rank, or cores / ranks when it is 0 (auto).
int resolved_threads_per_rank(const PointSettings& settings, int cores);

}  // namespace harness
