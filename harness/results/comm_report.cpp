#include "harness/results/comm_report.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/registry.h"

#include "harness/results/gpu_limits.h"
#include "harness/results/plot_data.h"
#include "harness/results/statistics.h"
#include "harness/results/table.h"

namespace harness {
namespace {

// A row of the tables: a point and one of its message sizes (none for a failed point).
struct SizeRow {
  const Run* run;
  const MessageSizeMetrics* size;  // null when the point failed
};

std::vector<SizeRow> size_rows(const ResultSet& set) {
  std::vector<SizeRow> rows;
  for (const auto& run : set.runs()) {
    if (!run.record.ok()) {
      rows.push_back({&run, nullptr});
      continue;
    }
    for (const auto& size : run.record.measurements->comm->sizes) rows.push_back({&run, &size});
  }
  return rows;
}

// A number of the row's message size, formatted; `otherwise` for a failed point.
auto of_size(std::string format, double MessageSizeMetrics::*field, std::string otherwise) {
  return [format, field, otherwise](const SizeRow& row) {
    return row.size ? fmt::format(fmt::runtime(format), row.size->*field) : otherwise;
  };
}

int node_count(const Run& run) {
  return run.record.measurements ? static_cast<int>(node_layout(run.record.measurements->hosts).size()) : 0;
}

// The fastest this backend could reduce the row's size if memory were its only limit, as a share
// of its measured time: its busiest rank's memory traffic (BackendInfo::memory_traffic) at the
// probes' rate, every rank at once, or rank 0 alone for a backend whose busiest rank works while
// the others wait (the parameter server: measured against every core's share it read 122% at
// 16 ranks, a limit it beat because it was not its limit). Negative when there is no such
// figure: several nodes, no probe, a backend without a traffic figure.
double memory_limit_fraction(const SizeRow& row) {
  if (row.size == nullptr || row.size->copy_probe_us <= 0 || row.size->time_us_median <= 0) return -1;
  if (node_count(*row.run) != 1) return -1;
  // Buffers the backend reduces in device memory never touch the host's (the "gpu" column).
  if (gpu_bound(run_exchange_path(*row.run)) == GpuBound::kDeviceMemory) return -1;
  const BackendInfo* backend = backend_or_null(row.run->record.settings.backend);
  if (backend == nullptr || backend->memory_traffic == nullptr) return -1;
  const bool alone = backend->busiest_rank_works_alone && row.size->copy_probe_one_us > 0;
  const double copy_us = alone ? row.size->copy_probe_one_us : row.size->copy_probe_us;
  const double reduce_us = alone ? row.size->reduce_probe_one_us : row.size->reduce_probe_us;
  // Both probes move 3 bytes per byte (a copy: read, write-allocate, write; a[i] += b[i]: read
  // two, write one in place); the faster is the node's memory rate at this size.
  const double probe_us = reduce_us > 0 ? std::min(copy_us, reduce_us) : copy_us;
  const double limit_us = backend->memory_traffic(row.run->record.settings.ranks) / 3.0 * probe_us;
  return limit_us / row.size->time_us_median;
}

std::string memory_above_its_limit(const ResultSet& set) {
  std::vector<std::string> above;
  for (const SizeRow& row : size_rows(set)) {
    // 100.5% prints as 101 in the column: the first figure a reader would question.
    if (const double fraction = memory_limit_fraction(row); fraction >= 1.005) {
      above.push_back(fmt::format("{} {} at {} B ({:.0f}%)", row.run->record.id, row.run->record.settings.backend,
                                  row.size->bytes, 100 * fraction));
    }
  }
  if (above.empty()) return "";
  const std::size_t shown = std::min<std::size_t>(above.size(), 4);
  return fmt::format(
      "memory above 100% of its limit: {}{}. The limit is the backend's modelled memory traffic at the rate of this "
      "run's copy and a[i] += b[i] probes, measured beside it, not a bound: a few points over it is noise between the "
      "two; far over it, the backend moved fewer bytes than its model counts (docs/backends-and-comm-benchmark.md)\n",
      fmt::join(above.begin(), above.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
      above.size() > shown ? fmt::format(" and {} more", above.size() - shown) : "");
}

// On device "cuda", the row's backend against the limit of the way its buffers take
// (gpu_limits.h); none on several nodes, where the network is the limit, as for memory.
GpuLimit row_gpu_limit(const SizeRow& row) {
  if (row.size == nullptr || node_count(*row.run) != 1) return {};
  const BackendInfo* backend = backend_or_null(row.run->record.settings.backend);
  const double traffic = backend != nullptr && backend->device_memory_traffic != nullptr
                             ? backend->device_memory_traffic(row.run->record.settings.ranks)
                             : 0;
  return gpu_limit(run_exchange_path(*row.run), traffic, *row.size);
}

bool any_run_on_a_gpu(const ResultSet& set) {
  for (const auto& run : set.runs()) {
    if (run.record.settings.device == "cuda") return true;
  }
  return false;
}

bool any_run_on_several_nodes(const ResultSet& set) {
  for (const auto& run : set.runs()) {
    if (node_count(run) > 1) return true;
  }
  return false;
}

// The settings that backends own (hier_allreduce_below_bytes, ...), by backend: set for one
// backend, they mean nothing to another, so they neither tell configurations apart for a
// comparison nor label another backend's.
std::map<std::string, std::set<std::string>> backend_owned_keys() {
  std::map<std::string, std::set<std::string>> keys;
  for (const BackendInfo& backend : backend_table()) {
    if (backend.settings == nullptr) continue;
    for (const BackendSetting& setting : backend.settings()) {
      keys[std::string(setting.key)].insert(std::string(backend.name));
    }
  }
  return keys;
}

// One configuration (its settings; repeats merged): each size's times over its repeats.
struct Configuration {
  PointSettings settings;
  std::map<int64_t, std::vector<double>> times_us;
};

std::string speedups(double low, double high) {
  const std::string first = fmt::format("{:.2f}", low);
  const std::string last = fmt::format("{:.2f}", high);
  return first == last ? fmt::format("{}x", first) : fmt::format("{}-{}x", first, last);
}

// Per message size both have, `reference`'s median time over its repeats divided by
// `configuration`'s, in size order.
std::vector<std::pair<int64_t, double>> speedups_against(const Configuration& configuration,
                                                         const Configuration& reference) {
  std::vector<std::pair<int64_t, double>> speedup;
  for (const auto& [bytes, times] : configuration.times_us) {
    const auto found = reference.times_us.find(bytes);
    if (found == reference.times_us.end()) continue;
    const double mine = median_of(times);
    const double theirs = median_of(found->second);
    if (mine > 0 && theirs > 0) speedup.emplace_back(bytes, theirs / mine);
  }
  return speedup;
}

// "faster from 16384 B up (1.20-2.00x), 1.00x below", "faster at every size (...)" or "not
// faster at the largest size, 65536 B (0.50x)". `speedup` is not empty.
std::string crossover_verdict(const std::vector<std::pair<int64_t, double>>& speedup) {
  // The first size from which it is faster at every larger size.
  std::size_t from = speedup.size();
  while (from > 0 && speedup[from - 1].second > 1) --from;
  const auto range = [&speedup](std::size_t begin, std::size_t end) {
    double low = speedup[begin].second;
    double high = low;
    for (std::size_t i = begin; i < end; ++i) {
      low = std::min(low, speedup[i].second);
      high = std::max(high, speedup[i].second);
    }
    return speedups(low, high);
  };
  if (from == 0) return fmt::format("faster at every size ({})", range(0, speedup.size()));
  if (from == speedup.size()) {
    return fmt::format("not faster at the largest size, {} B ({})", speedup.back().first,
                       range(speedup.size() - 1, speedup.size()));
  }
  return fmt::format("faster from {} B up ({}), {} below", speedup[from].first, range(from, speedup.size()),
                     range(0, from));
}

}  // namespace

std::string crossover_summary(const ResultSet& set) {
  std::map<std::string, Configuration> configurations;  // by its settings, as JSON
  std::vector<std::string> in_point_order;
  std::vector<PointSettings> all_settings;
  for (const auto& run : set.runs()) {
    if (!run.record.ok()) continue;
    const std::string settings = to_json(run.record.settings).dump();
    if (configurations.count(settings) == 0) in_point_order.push_back(settings);
    Configuration& configuration = configurations[settings];
    configuration.settings = run.record.settings;
    for (const auto& size : run.record.measurements->comm->sizes) {
      configuration.times_us[size.bytes].push_back(size.time_us_median);
    }
    all_settings.push_back(run.record.settings);
  }
  const std::map<std::string, std::set<std::string>> owners = backend_owned_keys();
  const auto comparison_key = [&owners](const PointSettings& settings) {
    Json key = to_json(settings);
    key.erase("backend");
    for (const auto& [name, backends] : owners) key.erase(name);
    return key.dump();
  };
  std::map<std::string, const Configuration*> allreduce;  // by comparison key
  for (const auto& [settings, configuration] : configurations) {
    if (configuration.settings.backend == "allreduce") allreduce[comparison_key(configuration.settings)] = &configuration;
  }
  const std::vector<std::string> varying = varying_keys(all_settings);
  const bool ranks_vary = std::find(varying.begin(), varying.end(), "ranks") != varying.end();
  // "backend=hier hier_allreduce_below_bytes=0", "backend=ring": without other backends' settings.
  const auto label = [&](const PointSettings& settings) {
    std::vector<std::string> keys;
    for (const auto& key : varying) {
      const auto owned = owners.find(key);
      if (owned == owners.end() || owned->second.count(settings.backend) != 0) keys.push_back(key);
    }
    return curve_label(settings, keys, ranks_vary);
  };
  std::string lines;
  for (const auto& settings : in_point_order) {
    const Configuration& configuration = configurations.at(settings);
    if (configuration.settings.backend == "allreduce") continue;
    const auto found = allreduce.find(comparison_key(configuration.settings));
    if (found == allreduce.end()) continue;
    const auto speedup = speedups_against(configuration, *found->second);
    if (speedup.empty()) continue;
    lines += fmt::format("  {}: {}\n", label(configuration.settings), crossover_verdict(speedup));
  }
  std::string summary;
  if (!lines.empty()) {
    summary = fmt::format("Against allreduce (its median time over repeats / this one's, per size):\n{}", lines);
  }

  // A backend's own crossover (BackendSetting::own_crossover): its configurations that differ
  // only in that setting, each against the one with the largest value (the algorithm below the
  // crossover at the most sizes), so that the line says from which size the other algorithm wins.
  for (const BackendInfo& backend : backend_table()) {
    if (backend.settings == nullptr) continue;
    for (const BackendSetting& setting : backend.settings()) {
      if (!setting.own_crossover) continue;
      const std::string key(setting.key);
      std::map<std::string, std::vector<const Configuration*>> groups;  // by the settings but `key`
      std::vector<std::string> group_order;
      for (const auto& settings : in_point_order) {
        const Configuration& configuration = configurations.at(settings);
        if (configuration.settings.backend != backend.name) continue;
        Json rest = to_json(configuration.settings);
        rest.erase(key);
        auto& group = groups[rest.dump()];
        if (group.empty()) group_order.push_back(rest.dump());
        group.push_back(&configuration);
      }
      for (const auto& name : group_order) {
        const auto& group = groups.at(name);
        if (group.size() < 2) continue;
        const Configuration* reference = group.front();
        for (const Configuration* configuration : group) {
          if (to_json(reference->settings)[key] < to_json(configuration->settings)[key]) reference = configuration;
        }
        std::string within;
        for (const Configuration* configuration : group) {
          if (configuration == reference) continue;
          const auto speedup = speedups_against(*configuration, *reference);
          if (speedup.empty()) continue;
          within += fmt::format("  {}: {}\n", label(configuration->settings), crossover_verdict(speedup));
        }
        if (within.empty()) continue;
        summary += fmt::format("Against {} (its median time over repeats / this one's, per size):\n{}",
                               label(reference->settings), within);
      }
    }
  }
  return summary;
}

std::string CommReport::failure(const Measurements& measurements) const {
  int64_t wrong = 0;
  for (const auto& size : measurements.comm->sizes) wrong += size.wrong;
  if (wrong == 0) return "";
  return fmt::format("#wrong = {}: the backend's sums differ from MPI_Allreduce's", wrong);
}

std::string CommReport::remark(const Measurements& /*measurements*/) const { return ""; }

std::map<std::string, std::string> CommReport::tables(const ResultSet& set) const {
  const std::vector<CsvColumn<SizeRow>> columns = {
      {"index", [](const SizeRow& row) { return std::to_string(row.run->record.index); }},
      {"id", [](const SizeRow& row) { return row.run->record.id; }},
      {"status", [](const SizeRow& row) { return std::string(status_name(row.run->record.status)); }},
      {"backend", [](const SizeRow& row) { return row.run->record.settings.backend; }},
      {"build", [](const SizeRow& row) { return row.run->record.settings.build; }},
      {"ranks", [](const SizeRow& row) { return std::to_string(row.run->record.settings.ranks); }},
      {"bytes", [](const SizeRow& row) { return row.size ? std::to_string(row.size->bytes) : ""; }},
      {"time_us_median", of_size("{:.6g}", &MessageSizeMetrics::time_us_median, "")},
      {"time_us_min", of_size("{:.6g}", &MessageSizeMetrics::time_us_min, "")},
      {"time_us_max", of_size("{:.6g}", &MessageSizeMetrics::time_us_max, "")},
      {"algbw_gbps", of_size("{:.6g}", &MessageSizeMetrics::algbw_gbps, "")},
      {"busbw_gbps", of_size("{:.6g}", &MessageSizeMetrics::busbw_gbps, "")},
      {"wrong", [](const SizeRow& row) { return row.size ? std::to_string(row.size->wrong) : ""; }},
      {"nodes", [](const SizeRow& row) { return std::to_string(node_count(*row.run)); }},
      {"reduce_probe_us", of_size("{:.6g}", &MessageSizeMetrics::reduce_probe_us, "")},
      {"copy_probe_us", of_size("{:.6g}", &MessageSizeMetrics::copy_probe_us, "")},
      {"reduce_probe_one_us", of_size("{:.6g}", &MessageSizeMetrics::reduce_probe_one_us, "")},
      {"copy_probe_one_us", of_size("{:.6g}", &MessageSizeMetrics::copy_probe_one_us, "")},
      {"memory_limit_fraction",
       [](const SizeRow& row) {
         const double fraction = memory_limit_fraction(row);
         return fraction < 0 ? std::string() : fmt::format("{:.4g}", fraction);
       }},
      {"device_to_host_probe_us", of_size("{:.6g}", &MessageSizeMetrics::device_to_host_probe_us, "")},
      {"host_to_device_probe_us", of_size("{:.6g}", &MessageSizeMetrics::host_to_device_probe_us, "")},
      {"device_copy_probe_us", of_size("{:.6g}", &MessageSizeMetrics::device_copy_probe_us, "")},
      {"gpu_limit",
       [](const SizeRow& row) {
         const GpuLimit limit = row_gpu_limit(row);
         return std::string(limit.backend_was_faster ? "its fastest reduction" : gpu_bound_name(limit.bound));
       }},
      {"gpu_limit_us",
       [](const SizeRow& row) {
         const GpuLimit limit = row_gpu_limit(row);
         return limit.bound == GpuBound::kNone ? std::string() : fmt::format("{:.6g}", limit.limit_us);
       }},
      {"gpu_limit_fraction",
       [](const SizeRow& row) {
         const GpuLimit limit = row_gpu_limit(row);
         return limit.bound == GpuBound::kNone ? std::string() : fmt::format("{:.4g}", limit.fraction);
       }},
      {"intra_node_gbps", of_size("{:.6g}", &MessageSizeMetrics::intra_node_gbps, "")},
      {"inter_node_gbps", of_size("{:.6g}", &MessageSizeMetrics::inter_node_gbps, "")},
      {"oversubscribed", [](const SizeRow& row) { return run_oversubscribed(*row.run); }},
      {"exchange_path", [](const SizeRow& row) { return run_exchange_path(*row.run); }},
      {"gpus", [](const SizeRow& row) { return run_gpus(*row.run); }},
      {"reason", [](const SizeRow& row) { return row.run->record.reason; }},
  };
  return {{"summary.csv",
           format_csv(set.experiment().builds.empty() ? without_column(columns, "build") : columns, size_rows(set))}};
}

std::string CommReport::console_table(const ResultSet& set) const {
  std::vector<ConsoleColumn<SizeRow>> columns = {
      {"id", "", 13, true, [](const SizeRow& row) { return row.run->record.id; }},
      {"backend", "", 9, false, [](const SizeRow& row) { return row.run->record.settings.backend; }},
      {"ranks", "", 5, false, [](const SizeRow& row) { return std::to_string(row.run->record.settings.ranks); }},
      {"size", "B", 11, false,
       [](const SizeRow& row) { return row.size ? std::to_string(row.size->bytes) : std::string("failed"); }},
      {"time", "us", 10, false, of_size("{:.1f}", &MessageSizeMetrics::time_us_median, "-")},
      {"min", "us", 10, false, of_size("{:.1f}", &MessageSizeMetrics::time_us_min, "-")},
      {"max", "us", 10, false, of_size("{:.1f}", &MessageSizeMetrics::time_us_max, "-")},
      {"algbw", "GB/s", 8, false, of_size("{:.3f}", &MessageSizeMetrics::algbw_gbps, "-")},
      {"busbw", "GB/s", 8, false, of_size("{:.3f}", &MessageSizeMetrics::busbw_gbps, "-")},
      {"#wrong", "", 7, false,
       [](const SizeRow& row) { return row.size ? std::to_string(row.size->wrong) : std::string("-"); }},
      {"memory", "% limit", 8, false,
       [](const SizeRow& row) {
         const double fraction = memory_limit_fraction(row);
         return fraction < 0 ? std::string("-") : fmt::format("{:.0f}", 100 * fraction);
       }},
  };
  if (any_run_on_a_gpu(set)) {
    columns.push_back({"gpu", "% limit", 8, false, [](const SizeRow& row) { return gpu_limit_cell(row_gpu_limit(row)); }});
  }
  if (!set.experiment().builds.empty()) {
    columns.insert(columns.begin() + 2, {"build", "", 6, false, [](const SizeRow& row) { return row.run->record.settings.build; }});
  }
  if (any_run_on_several_nodes(set)) {
    // What the transport gives between two ranks, beside what the backend made of it.
    columns.push_back({"intra", "GB/s", 7, false, of_size("{:.2f}", &MessageSizeMetrics::intra_node_gbps, "-")});
    columns.push_back({"inter", "GB/s", 7, false, of_size("{:.2f}", &MessageSizeMetrics::inter_node_gbps, "-")});
  }
  const std::vector<SizeRow> rows = size_rows(set);
  std::string table = format_console_table(columns, rows);
  if (std::any_of(rows.begin(), rows.end(), [](const SizeRow& row) { return row_gpu_limit(row).backend_was_faster; })) {
    table += "\ngpu: * the backend's fastest reduction beat the GPU probes' limit, and is the limit\n";
  }
  if (const std::string above = memory_above_its_limit(set); !above.empty()) table += "\n" + above;
  if (const std::string crossovers = crossover_summary(set); !crossovers.empty()) {
    table += "\n";
    table += crossovers;
  }
  return table;
}

std::map<std::string, std::string> CommReport::plot_data(const ResultSet& set) const {
  std::vector<PointSettings> all_settings;
  for (const auto& run : set.runs()) all_settings.push_back(run.record.settings);
  const std::vector<std::string> keys = varying_keys(all_settings);
  std::string bandwidth;
  std::string latency;
  for (const auto& run : set.runs()) {
    if (!run.record.ok()) continue;
    const std::string title = block_title(curve_label(run.record.settings, keys, true));
    bandwidth += (bandwidth.empty() ? "" : "\n\n") + title;
    latency += (latency.empty() ? "" : "\n\n") + title;
    for (const auto& size : run.record.measurements->comm->sizes) {
      bandwidth += fmt::format("{} {:.6g}\n", size.bytes, size.busbw_gbps);
      latency += fmt::format("{} {:.6g}\n", size.bytes, size.time_us_median);
    }
  }
  if (bandwidth.empty()) return {};
  return {{"bandwidth", bandwidth}, {"latency", latency}};
}

}  // namespace harness
