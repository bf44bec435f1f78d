#include "harness/results/comm_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/registry.h"

#include "harness/results/crossover_summary.h"
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

// A probe's time or a link's bandwidth: 0 where it was not measured (one node; the CPU), which is
// shown as `otherwise` (empty in a table, "-" on the console) rather than read as a measured 0.
auto measured_of_size(double MessageSizeMetrics::*field, std::string format = "{:.6g}", std::string otherwise = "") {
  return [field, format, otherwise](const SizeRow& row) {
    return row.size && row.size->*field > 0 ? fmt::format(fmt::runtime(format), row.size->*field) : otherwise;
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
  const double traffic = backend->memory_traffic(row.run->record.settings.ranks);
  if (traffic <= 0) return -1;  // one rank: nothing moves, there is no limit to be a share of
  const double limit_us = traffic / 3.0 * probe_us;
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

}  // namespace

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
      // A point that ended without measurements says nothing of its nodes.
      {"nodes", [](const SizeRow& row) {
         const int nodes = node_count(*row.run);
         return nodes > 0 ? std::to_string(nodes) : std::string();
       }},
      {"reduce_probe_us", measured_of_size(&MessageSizeMetrics::reduce_probe_us)},
      {"copy_probe_us", measured_of_size(&MessageSizeMetrics::copy_probe_us)},
      {"reduce_probe_one_us", measured_of_size(&MessageSizeMetrics::reduce_probe_one_us)},
      {"copy_probe_one_us", measured_of_size(&MessageSizeMetrics::copy_probe_one_us)},
      {"memory_limit_fraction",
       [](const SizeRow& row) {
         const double fraction = memory_limit_fraction(row);
         return fraction < 0 ? std::string() : fmt::format("{:.4g}", fraction);
       }},
      {"device_to_host_probe_us", measured_of_size(&MessageSizeMetrics::device_to_host_probe_us)},
      {"host_to_device_probe_us", measured_of_size(&MessageSizeMetrics::host_to_device_probe_us)},
      {"device_copy_probe_us", measured_of_size(&MessageSizeMetrics::device_copy_probe_us)},
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
      {"intra_node_gbps", measured_of_size(&MessageSizeMetrics::intra_node_gbps)},
      {"inter_node_gbps", measured_of_size(&MessageSizeMetrics::inter_node_gbps)},
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
    columns.push_back({"intra", "GB/s", 7, false, measured_of_size(&MessageSizeMetrics::intra_node_gbps, "{:.2f}", "-")});
    columns.push_back({"inter", "GB/s", 7, false, measured_of_size(&MessageSizeMetrics::inter_node_gbps, "{:.2f}", "-")});
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
  // One curve per configuration: the median over its repeats at each size (a curve per repeat
  // would draw each configuration several times, in as many colours, under one title).
  struct Curve {
    std::string title;
    std::map<int64_t, std::vector<double>> busbw_gbps, time_us;
  };
  std::vector<Curve> curves;
  for (const auto& run : set.runs()) {
    if (!run.record.ok()) continue;
    const PointSettings& settings = run.record.settings;
    // A comm run trains no workload: with nothing else varying, the backend names the curve.
    const std::string title = keys.empty() ? fmt::format("{} ranks={}", settings.backend, settings.ranks)
                                           : curve_label(settings, keys, true);
    auto curve = std::find_if(curves.begin(), curves.end(), [&](const Curve& c) { return c.title == title; });
    if (curve == curves.end()) curve = curves.insert(curves.end(), Curve{title, {}, {}});
    for (const auto& size : run.record.measurements->comm->sizes) {
      curve->busbw_gbps[size.bytes].push_back(size.busbw_gbps);
      curve->time_us[size.bytes].push_back(size.time_us_median);
    }
  }
  std::string bandwidth;
  std::string latency;
  for (const Curve& curve : curves) {
    bandwidth += (bandwidth.empty() ? "" : "\n\n") + block_title(curve.title);
    latency += (latency.empty() ? "" : "\n\n") + block_title(curve.title);
    for (const auto& [bytes, values] : curve.busbw_gbps) bandwidth += fmt::format("{} {:.6g}\n", bytes, median_of(values));
    for (const auto& [bytes, values] : curve.time_us) latency += fmt::format("{} {:.6g}\n", bytes, median_of(values));
  }
  if (bandwidth.empty()) return {};
  return {{"bandwidth", bandwidth}, {"latency", latency}};
}

}  // namespace harness
