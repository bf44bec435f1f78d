#include "harness/results/results.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/version.h"

namespace harness {
namespace fs = std::filesystem;

void ResultsLayout::create() const {
  for (const auto& directory : {directory_, points_dir(), logs_dir(), plots_dir()}) {
    std::error_code error;
    fs::create_directories(directory, error);
    if (error) {
      throw ConfigError(fmt::format("--out: cannot create directory {}: {}", directory,
                                    error.message()));
    }
    if (::access(directory.c_str(), W_OK) != 0) {
      throw ConfigError(fmt::format("--out: directory {} is not writable", directory));
    }
  }
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Json collect_provenance(const std::vector<std::string>& command_line) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  Json provenance = Json::object();
  provenance["harness_version"] = kHarnessVersion;
  provenance["git_commit"] = git_commit();
  provenance["host"] = host;
  provenance["command_line"] = command_line;
  provenance["working_directory"] = fs::current_path().string();
  return provenance;
}

Json make_point_record(const std::string& experiment_name, const Point& point,
                       const LaunchOutcome& launch, const Json& provenance,
                       const Json& measurements, const std::string& failure_reason,
                       const std::vector<std::string>& log_tail) {
  const bool ok = failure_reason.empty();
  Json record = Json::object();
  record["schema_version"] = kRecordSchemaVersion;
  record["experiment"] = experiment_name;
  record["id"] = point.id;
  record["index"] = point.index;
  record["repeat"] = point.repeat;
  record["hash"] = point_hash(point.settings, point.repeat);
  record["status"] = ok ? "ok" : "failed";
  if (!ok) {
    record["reason"] = failure_reason;
    record["log_tail"] = log_tail;
  }
  record["settings"] = to_json(point.settings);
  record["launch"] = {
      {"command", launch.command},
      {"threads_per_rank", launch.threads_per_rank},
      {"outcome", launch.process.describe()},
      {"wall_time_s", launch.process.wall_time_s},
  };
  record["provenance"] = provenance;
  record["measurements"] = ok ? measurements : Json();
  return record;
}

namespace {

std::vector<ScalingInput> scaling_inputs(const std::vector<SummaryRow>& rows) {
  std::vector<ScalingInput> inputs;
  for (const auto& row : rows) {
    const PointMetrics metrics = row.metrics.value_or(PointMetrics{});
    inputs.push_back({row.settings, row.ok && row.metrics, metrics.time_s, metrics.samples_trained});
  }
  return inputs;
}

std::string csv_field(const std::string& text);
std::string number_or_empty(bool present, double value);
std::string workload_label(const PointSettings& settings);
int64_t batch_per_training_rank(const PointSettings& settings);

}  // namespace

bool adopt_completed_record(const ResultsLayout& layout, const Point& point) {
  const std::string suffix = fmt::format("-{}.json", point_hash(point.settings, point.repeat));
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(layout.points_dir(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    Json record;
    try {
      record = read_json_file(entry.path().string());
      if (record.at("status") != "ok" || record.at("settings") != to_json(point.settings)) continue;
    } catch (const std::exception&) {
      continue;  // unreadable: run the point again
    }
    const std::string target = layout.point_record(point.id);
    if (entry.path().string() != target) {
      record["id"] = point.id;
      record["index"] = point.index;
      try {
        write_file_atomically(target, record.dump(1));
      } catch (const Error&) {
        return false;  // cannot move it: run the point again
      }
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
      fs::rename(layout.point_log(entry.path().stem().string()), layout.point_log(point.id), ignored);
    }
    return true;
  }
  return false;
}

std::map<std::string, std::string> stored_record_ids(const ResultsLayout& layout) {
  std::map<std::string, std::string> ids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(layout.points_dir(), error)) {
    if (entry.path().extension() != ".json") continue;
    try {
      const Json record = read_json_file(entry.path().string());
      const PointSettings settings = settings_from_json(record.at("settings"), entry.path().string());
      ids[to_json(settings).dump() + "|" + std::to_string(record.value("repeat", 0))] =
          entry.path().stem().string();
    } catch (const std::exception& bad) {
      // Skipping it would rewrite summary.csv without that run and move its baselines.
      throw Error(fmt::format("{}: not a readable point record ({}); move it out of {} to plot "
                              "the others", entry.path().string(), bad.what(),
                              layout.points_dir()));
    }
  }
  return ids;
}

std::vector<SummaryRow> load_summary(const ResultsLayout& layout,
                                     const std::vector<std::string>& only_ids,
                                     const Json& baseline) {
  std::vector<SummaryRow> rows;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(layout.points_dir(), error)) {
    if (entry.path().extension() != ".json") continue;
    if (!only_ids.empty() && std::find(only_ids.begin(), only_ids.end(),
                                       entry.path().stem().string()) == only_ids.end()) {
      continue;
    }
    const Json record = read_json_file(entry.path().string());
    SummaryRow row;
    try {
      row.index = record.at("index").get<int>();
      row.repeat = record.value("repeat", 0);
      row.id = record.at("id").get<std::string>();
      row.settings = settings_from_json(record.at("settings"), entry.path().string());
      row.ok = record.at("status") == "ok";
      row.reason = record.value("reason", "");
      if (row.ok && row.settings.kind == Kind::kComm) {
        row.message_sizes = message_size_metrics(record.at("measurements"));
      } else if (row.ok) {
        const Json& measurements = record.at("measurements");
        row.metrics = point_metrics(measurements);
        row.train_samples = measurements.at("train_samples").get<int64_t>();
        row.epochs = measurements.at("epochs");
      }
    } catch (const Json::exception& bad) {
      throw Error(fmt::format("{}: malformed point record: {}", entry.path().string(), bad.what()));
    } catch (const Error& bad) {  // measurements the metrics cannot use
      const std::string what = bad.what();
      throw Error(what.rfind(entry.path().string(), 0) == 0
                      ? what
                      : fmt::format("{}: malformed point record: {}", entry.path().string(), what));
    }
    rows.push_back(std::move(row));
  }
  if (error) throw Error(fmt::format("{}: cannot list: {}", layout.points_dir(), error.message()));
  std::sort(rows.begin(), rows.end(),
            [](const SummaryRow& a, const SummaryRow& b) { return a.index < b.index; });

  const auto scaling = scaling_metrics(scaling_inputs(rows), baseline);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].scaling = scaling[i];
  return rows;
}

std::vector<ConfigurationStats> summary_stats(const std::vector<SummaryRow>& rows,
                                              const Json& baseline) {
  return configuration_stats(scaling_inputs(rows), baseline);
}

std::string stats_table(const std::vector<SummaryRow>& rows,
                        const std::vector<ConfigurationStats>& stats) {
  std::string out;
  const auto line = [&out](auto&&... fields) {
    out += fmt::format("{:<13} {:>14} {:>10} {:>5} {:>6} {:>5} {:>26} {:>20} {:>16}\n", fields...);
  };
  line("first id", "workload", "backend", "ranks", "batch", "ok", "throughput", "speedup",
       "efficiency");
  line("", "", "", "", "/rank", "runs", "samples/s [95% CI]", "x [95% CI]", "% [95% CI]");
  for (const auto& stat : stats) {
    const PointSettings& s = stat.settings;
    const bool scaled = stat.baseline >= 0;
    line(rows[stat.runs.front()].id, workload_label(s), s.backend, s.ranks,
         batch_per_training_rank(s),
         fmt::format("{}/{}", stat.ok_runs, stat.runs.size()),
         stat.ok_runs > 0 ? fmt::format("{:.0f} [{:.0f}-{:.0f}]", stat.throughput.median,
                                        stat.throughput.low, stat.throughput.high)
                          : "-",
         scaled ? fmt::format("{:.2f} [{:.2f}-{:.2f}]", stat.speedup.median, stat.speedup.low,
                              stat.speedup.high)
                : "-",
         scaled ? fmt::format("{:.0f} [{:.0f}-{:.0f}]", 100 * stat.efficiency.median,
                              100 * stat.efficiency.low, 100 * stat.efficiency.high)
                : "-");
  }
  return out;
}

std::string stats_csv(const std::vector<SummaryRow>& rows,
                      const std::vector<ConfigurationStats>& stats) {
  std::string out =
      "configuration,first_id,workload,engine,backend,device,ranks,batch_size,dataset_size,epochs,"
      "lr,overlap,runs,ok_runs,time_s_median,time_s_low,time_s_high,throughput_median,"
      "throughput_low,throughput_high,speedup_median,speedup_low,speedup_high,"
      "efficiency_median,efficiency_low,efficiency_high,karp_flatt,baseline_id\n";
  for (std::size_t c = 0; c < stats.size(); ++c) {
    const ConfigurationStats& stat = stats[c];
    const PointSettings& s = stat.settings;
    const bool ok = stat.ok_runs > 0;
    const bool scaled = stat.baseline >= 0;
    const auto interval = [](bool present, const Interval& value) {
      return fmt::format("{},{},{}", number_or_empty(present, value.median),
                         number_or_empty(present, value.low), number_or_empty(present, value.high));
    };
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", c,
        rows[stat.runs.front()].id, csv_field(s.workload), s.engine, csv_field(s.backend), s.device,
        s.ranks, s.batch_size, rows[stat.runs.front()].ok ? rows[stat.runs.front()].train_samples : s.dataset_size,
        s.epochs, s.lr, s.overlap, stat.runs.size(), stat.ok_runs, interval(ok, stat.time_s),
        interval(ok, stat.throughput), interval(scaled, stat.speedup), interval(scaled, stat.efficiency),
        number_or_empty(stat.karp_flatt.has_value(), stat.karp_flatt.value_or(0)),
        scaled ? rows[stats[stat.baseline].runs.front()].id : "");
  }
  return out;
}

namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// Numbers in CSV: enough digits to round-trip timings, empty when not measured.
std::string number_or_empty(bool present, double value) {
  return present ? fmt::format("{:.6g}", value) : "";
}

// "iris_mlp", or "iris_mlp/blas" for a workload on its non-default engine.
std::string workload_label(const PointSettings& settings) {
  return settings.engine == "torch" ? settings.workload : settings.workload + "/" + settings.engine;
}

// The tables' "batch /rank" column: batch_size itself under weak scaling, its share under strong
// scaling (summary.csv keeps the setting as written).
int64_t batch_per_training_rank(const PointSettings& settings) {
  return per_rank_batch(settings, worker_layout(settings, 0, settings.ranks).workers);
}

}  // namespace

std::string summary_csv(const std::vector<SummaryRow>& rows) {
  std::string out =
      "index,id,repeat,status,workload,engine,backend,device,ranks,batch_size,dataset_size,epochs,lr,seed,"
      "threads_per_rank,bucket_mb,overlap,time_s,throughput_samples_per_s,step_time_s,"
      "compute_time_s,comm_time_s,exposed_comm_time_s,imbalance_time_s,comm_fraction,"
      "overlap_fraction,speedup,"
      "efficiency,final_loss,accuracy,reason\n";
  for (const auto& row : rows) {
    const PointSettings& s = row.settings;
    const bool m = row.metrics.has_value();
    const PointMetrics metrics = row.metrics.value_or(PointMetrics{});
    const bool scaled = row.scaling.has_value();
    const Scaling scaling = row.scaling.value_or(Scaling{});
    const int64_t dataset_size = row.ok ? row.train_samples : s.dataset_size;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
        row.index, row.id, row.repeat, row.ok ? "ok" : "failed", csv_field(s.workload), s.engine,
        csv_field(s.backend),
        s.device, s.ranks, s.batch_size, dataset_size, s.epochs, s.lr, s.seed, s.threads_per_rank,
        s.bucket_mb, s.overlap, number_or_empty(m, metrics.time_s),
        number_or_empty(m, metrics.throughput_samples_per_s),
        number_or_empty(m, metrics.step_time_s), number_or_empty(m, metrics.compute_time_s),
        number_or_empty(m, metrics.comm_time_s), number_or_empty(m, metrics.exposed_comm_time_s),
        number_or_empty(metrics.imbalance_time_s.has_value(), metrics.imbalance_time_s.value_or(0)),
        number_or_empty(m, metrics.comm_fraction), number_or_empty(m, metrics.overlap),
        number_or_empty(scaled, scaling.speedup), number_or_empty(scaled, scaling.efficiency),
        number_or_empty(m, metrics.final_loss), number_or_empty(m, metrics.accuracy),
        csv_field(row.reason));
  }
  return out;
}

std::string summary_table(const std::vector<SummaryRow>& rows) {
  std::string out;
  const auto line = [&out](auto&&... fields) {
    out += fmt::format("{:<13} {:>14} {:>10} {:>5} {:>6} {:>7} {:>8} {:>10} {:>9} {:>7} {:>7} "
                       "{:>7} {:>6} {:>8} {:>6}\n",
                       fields...);
  };
  line("id", "workload", "backend", "ranks", "batch", "status", "time", "throughput", "step",
       "comm", "hidden", "speedup", "effic", "loss", "acc");
  line("", "", "", "", "/rank", "", "s", "samples/s", "ms", "% step", "%", "x", "%", "", "%");
  for (const auto& row : rows) {
    if (!row.metrics) {
      line(row.id, workload_label(row.settings), row.settings.backend, row.settings.ranks,
           batch_per_training_rank(row.settings), "failed", "-", "-", "-", "-", "-", "-", "-", "-",
           "-");
      continue;
    }
    const PointMetrics& m = *row.metrics;
    const std::string speedup = row.scaling ? fmt::format("{:.2f}", row.scaling->speedup) : "-";
    const std::string efficiency =
        row.scaling ? fmt::format("{:.0f}", 100 * row.scaling->efficiency) : "-";
    line(row.id, workload_label(row.settings), row.settings.backend, row.settings.ranks,
         batch_per_training_rank(row.settings), "ok",
         fmt::format("{:.2f}", m.time_s), fmt::format("{:.0f}", m.throughput_samples_per_s),
         fmt::format("{:.3f}", 1e3 * m.step_time_s), fmt::format("{:.1f}", 100 * m.comm_fraction),
         fmt::format("{:.0f}", 100 * m.overlap), speedup, efficiency, fmt::format("{:.4f}", m.final_loss),
         fmt::format("{:.1f}", 100 * m.accuracy));
  }
  return out;
}

std::string comm_summary_csv(const std::vector<SummaryRow>& rows) {
  std::string out =
      "index,id,status,backend,ranks,bytes,time_us_median,time_us_min,time_us_max,algbw_gbps,"
      "busbw_gbps,wrong,reason\n";
  for (const auto& row : rows) {
    const std::string prefix = fmt::format("{},{},{},{},{}", row.index, row.id,
                                           row.ok ? "ok" : "failed",
                                           csv_field(row.settings.backend), row.settings.ranks);
    if (row.message_sizes.empty()) {
      out += fmt::format("{},,,,,,,,{}\n", prefix, csv_field(row.reason));
      continue;
    }
    for (const auto& size : row.message_sizes) {
      out += fmt::format("{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{}\n", prefix, size.bytes,
                         size.time_us_median, size.time_us_min, size.time_us_max, size.algbw_gbps,
                         size.busbw_gbps, size.wrong, csv_field(row.reason));
    }
  }
  return out;
}

std::string comm_summary_table(const std::vector<SummaryRow>& rows) {
  std::string out;
  const auto line = [&out](auto&&... fields) {
    out += fmt::format("{:<13} {:>9} {:>5} {:>11} {:>10} {:>10} {:>10} {:>8} {:>8} {:>7}\n",
                       fields...);
  };
  line("id", "backend", "ranks", "size", "time", "min", "max", "algbw", "busbw", "#wrong");
  line("", "", "", "B", "us", "us", "us", "GB/s", "GB/s", "");
  for (const auto& row : rows) {
    if (!row.ok) {
      line(row.id, row.settings.backend, row.settings.ranks, "failed", "-", "-", "-", "-", "-", "-");
      continue;
    }
    for (const auto& size : row.message_sizes) {
      line(row.id, row.settings.backend, row.settings.ranks, size.bytes,
           fmt::format("{:.1f}", size.time_us_median), fmt::format("{:.1f}", size.time_us_min),
           fmt::format("{:.1f}", size.time_us_max), fmt::format("{:.3f}", size.algbw_gbps),
           fmt::format("{:.3f}", size.busbw_gbps), size.wrong);
    }
  }
  return out;
}

}  // namespace harness
