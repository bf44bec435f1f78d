#include "harness/study/settings.h"

#include <algorithm>
#include <map>

#include "backends/registry.h"
#include "harness/common/json_values.h"
#include "harness/study/common_settings.h"
#include "harness/study/kind.h"
#include "schemes/registry.h"
#include "workloads/registry.h"

namespace harness {

const std::vector<SettingRow>& setting_table() {
  static const std::vector<SettingRow> table = [] {
    std::vector<SettingRow> rows = common_setting_rows();
    const auto add = [&rows](std::vector<SettingRow> owned) {
      rows.insert(rows.end(), std::make_move_iterator(owned.begin()),
                  std::make_move_iterator(owned.end()));
    };
    std::vector<std::string_view> backend_keys;
    for (const auto& backend : backend_table()) {
      if (backend.settings == nullptr) continue;
      for (const BackendSetting& setting : backend.settings()) {
        // A setting that several backends own (shm_reduce_threads) is one row.
        if (std::ranges::find(backend_keys, setting.key) != backend_keys.end()) continue;
        backend_keys.push_back(setting.key);
        add({owned_setting(setting.key, setting.expected, setting.help, setting.json_schema, setting.fallback,
                           setting.normalise)});
      }
    }
    for (const auto& workload : workload_table()) {
      if (workload.settings != nullptr) add(workload.settings());
    }
    for (const auto& scheme : scheme_table()) {
      if (scheme.settings != nullptr) add(scheme.settings());
    }
    add(comm_setting_rows());
    return rows;
  }();
  return table;
}

void apply_setting(PointSettings& settings, std::string_view key, const Json& value,
                   const std::string& where) {
  apply_option(setting_table(), settings, key, value, where, "setting");
}

Json to_json(const PointSettings& settings) { return options_to_json(setting_table(), settings); }

bool has_values(const PointSettings& settings, const Json& values) {
  const Json all = to_json(settings);
  return std::all_of(values.items().begin(), values.items().end(),
                     [&all](const auto& item) { return all[item.key()] == item.value(); });
}

PointSettings settings_from_json(const Json& object, const std::string& where) {
  if (!object.is_object()) fail_expected(where, "an object of settings", object);
  PointSettings settings;
  for (const auto& [key, value] : object.items()) {
    apply_setting(settings, key, value, where + "." + key);
  }
  return settings;
}

std::vector<std::string> settings_not_read(const PointSettings& settings) {
  // Key -> whether one of its owners is this point's (a key may have several: shm_reduce_threads).
  std::map<std::string, bool> read_by_owner;
  const auto own = [&read_by_owner](std::string_view key, bool owner_is_ours) {
    read_by_owner[std::string(key)] |= owner_is_ours;
  };
  const BackendOptions options = backend_options(settings);
  for (const auto& backend : backend_table()) {
    if (backend.settings == nullptr) continue;
    for (const BackendSetting& setting : backend.settings()) {
      own(setting.key, backend.name == settings.backend && (setting.read_where == nullptr || setting.read_where(options)));
    }
  }
  for (const auto& workload : workload_table()) {
    if (workload.settings == nullptr) continue;
    for (const SettingRow& row : workload.settings()) {
      own(row.key, settings.kind == Kind::kTrain && workload.name == settings.workload);
    }
  }
  for (const auto& scheme : scheme_table()) {
    if (scheme.settings == nullptr) continue;
    for (const SettingRow& row : scheme.settings()) {
      own(row.key, settings.kind == Kind::kTrain && scheme.name == settings.scheme);
    }
  }
  for (const SettingRow& row : comm_setting_rows()) own(row.key, settings.kind == Kind::kComm);
  std::vector<std::string> unread;
  for (const auto& [key, read] : read_by_owner) {
    if (!read) unread.push_back(key);
  }
  // The comm benchmark computes nothing to delay.
  if (settings.kind == Kind::kComm) unread.emplace_back("inject_compute_delay_ms");
  if (settings.inject_compute_delay_ms == 0 || settings.kind == Kind::kComm) {
    unread.emplace_back("inject_compute_delay_rank");
  }
  if (settings.device != "cuda") unread.emplace_back("staging_chunk_bytes");  // nothing is staged
  // Iris holds out a fixed share of each species, K-means evaluates on what it clusters, a comm
  // benchmark trains nothing.
  if (settings.kind == Kind::kComm || settings.workload == "iris_mlp" || settings.workload == "kmeans") {
    unread.emplace_back("test_size");
  }
  return unread;
}

BackendOptions backend_options(const PointSettings& settings) {
  BackendOptions options;
  options.training = settings.kind == Kind::kTrain;
  options.ranks = settings.ranks;
  options.nodes = settings.nodes;
  const int nodes = std::max(1, settings.nodes);
  options.ranks_per_node = settings.ranks_per_node > 0 ? settings.ranks_per_node : (settings.ranks + nodes - 1) / nodes;
  options.threads_per_rank = settings.threads_per_rank;
  options.device = settings.device;
  // K-means adds up its sums in host memory on every device.
  for (const WorkloadInfo& workload : workload_table()) {
    if (workload.name == settings.workload && workload.algorithm == Algorithm::kLloydKMeans) {
      options.host_memory_workload = settings.workload;
    }
  }
  options.inject_comm_delay_us = settings.inject_comm_delay_us;
  const BackendInfo* backend = backend_or_null(settings.backend);
  if (backend != nullptr && backend->settings != nullptr) {
    for (const BackendSetting& setting : backend->settings()) {
      const std::string key(setting.key);
      if (const auto found = settings.options.find(key); found != settings.options.end()) options.owned[key] = *found;
    }
  }
  return options;
}

WorkerLayout worker_layout(const PointSettings& settings, int rank, int world_size) {
  // async_ps: ranks 0 to servers-1 hold the parameters and only serve (validation leaves a worker).
  if (const int servers = ps_servers(settings); servers > 0) {
    return {std::max(1, world_size - servers), rank < servers ? -1 : rank - servers};
  }
  // pipeline: rank = stage x replicas + replica; every rank trains, the batch is the replicas'.
  if (const int stages = pipeline_stages(settings); stages > 0) {
    const int replicas = std::max(1, world_size / stages);
    return {replicas, rank % replicas};
  }
  const BackendInfo* backend = backend_or_null(settings.backend);
  if (backend != nullptr && backend->root_only_serves != nullptr &&
      backend->root_only_serves(backend_options(settings))) {
    return {std::max(1, world_size - 1), rank == 0 ? -1 : rank - 1};
  }
  return {world_size, rank};
}

int64_t per_rank_batch(const PointSettings& settings, int workers) {
  return settings.scaling == "strong" ? settings.batch_size / std::max(1, workers)
                                      : settings.batch_size;
}

int64_t global_batch(const PointSettings& settings, int workers) {
  return per_rank_batch(settings, workers) * workers;
}

double learning_rate(const PointSettings& settings, int workers, double epochs_done) {
  if (settings.lr_scaling != "linear") return settings.lr;
  // By default lr is meant for one rank's batch, batch_size: weak scaling multiplies the global
  // batch by the ranks, and the rate with it; strong scaling keeps both.
  const double reference = settings.lr_reference_batch > 0 ? settings.lr_reference_batch
                                                            : static_cast<double>(settings.batch_size);
  const double target = settings.lr * static_cast<double>(global_batch(settings, workers)) / reference;
  if (epochs_done >= settings.warmup_epochs) return target;
  return settings.lr + (target - settings.lr) * epochs_done / settings.warmup_epochs;
}

PointSettings without_observation(PointSettings settings) {
  settings.timeline = false;
  settings.loss_every = 0;
  settings.target.reset();
  return settings;
}

int resolved_threads_per_rank(const PointSettings& settings, int cores) {
  if (settings.threads_per_rank > 0) return settings.threads_per_rank;
  return std::max(1, cores / std::max(1, settings.ranks));
}

int64_t loss_window_steps(const PointSettings& settings, int64_t total_steps) {
  if (settings.loss_every > 0) return settings.loss_every;
  return std::max<int64_t>(1, (total_steps + kLossValuesPerPoint - 1) / kLossValuesPerPoint);
}

}  // namespace harness
