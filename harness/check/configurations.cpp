#include "harness/check/configurations.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "harness/check/check_metrics.h"
#include "harness/check/check_statistics.h"
#include "harness/common/errors.h"
#include "harness/results/result_set.h"
#include "harness/study/sweep.h"

namespace harness {
namespace fs = std::filesystem;

namespace {

// A setting's value as labels show it: numbers as plain decimals (CI systems read labels as test
// names), strings without quotes.
std::string value_text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.is_number() ? format_number(value.get<double>()) : value.dump();
}

}  // namespace

std::string configuration_label(const Experiment& experiment, const PointSettings& settings) {
  const Json values = to_json(settings);
  std::string text = (settings.kind == Kind::kComm ? "comm" : settings.workload) + " " + settings.backend;
  for (const auto& axis : experiment.sweep) {
    if (axis.key == "workload" || axis.key == "backend") continue;
    text += " " + axis.key + "=" + value_text(values[axis.key]);
  }
  return text;
}

std::string values_text(const Json& values) {
  std::string text;
  for (const auto& [key, value] : values.items()) text += (text.empty() ? "" : " ") + key + "=" + value_text(value);
  return text;
}

PointSettings with_values(PointSettings settings, const Json& values) {
  for (const auto& [key, value] : values.items()) apply_setting(settings, key, value, "against." + key);
  return settings;
}

bool is_reference(const PointSettings& settings, const Json& against) {
  const Json values = to_json(settings);
  for (const auto& [key, value] : against.items()) {
    if (values[key] != value) return false;
  }
  return true;
}

const Configuration* ResultsSide::find(const PointSettings& settings, const Configuration* exclude,
                                       bool allow_other_delay) const {
  const std::string identity = configuration_identity(settings);
  for (const auto& configuration : configurations) {
    if (&configuration != exclude && configuration.identity == identity) return &configuration;
  }
  if (!allow_other_delay) return nullptr;
  // Equal but for the injected delay: the one without a delay, else the first.
  const std::string match_identity = configuration_identity(settings, true);
  const Configuration* found = nullptr;
  for (const auto& configuration : configurations) {
    if (&configuration == exclude || configuration.match_identity != match_identity) continue;
    if (configuration.settings.inject_comm_delay_us == 0) return &configuration;
    if (found == nullptr) found = &configuration;
  }
  return found;
}

std::string configuration_identity(const PointSettings& settings, bool ignore_injection) {
  PointSettings compared = without_observation(settings);
  if (ignore_injection) compared.inject_comm_delay_us = 0;
  return to_json(compared).dump();
}

namespace {

// "damaged record: step_time is -1000 ms (expected a finite number >= 0)"; "" when every metric
// of the record is one.
std::string damaged_metric(const Measurements& measurements) {
  for (const CheckMetric& metric : check_metric_table()) {
    for (const MetricValue& value : metric_values(metric, measurements)) {
      if (std::isfinite(value.value) && value.value >= 0) continue;
      return fmt::format("damaged record: {}{} is {} {} (expected a finite number >= 0)", metric.name,
                         value.size.empty() ? "" : " at " + value.size, value.value, metric.unit);
    }
  }
  return "";
}

}  // namespace

void add_record(Configuration& configuration, int repeat, PointRecord& record) {
  if (record.ok() && record.measurements) {
    const std::string damage = damaged_metric(*record.measurements);
    if (damage.empty()) {
      configuration.ok[repeat] = &record;
      return;
    }
    record.status = PointStatus::kFailed;
    record.reason = damage;
  }
  (ended_by_the_scheduler(record.status) ? configuration.interrupted : configuration.not_ok)[repeat] = &record;
}

ResultsSide load_results_side(const std::string& dir) {
  ResultsSide side;
  side.dir = dir;
  const ResultsDirectory directory(dir);
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw ConfigError(fmt::format("{}: not a results directory (no such directory)", dir));
  if (!fs::exists(directory.experiment_copy(), error) || !fs::is_directory(directory.points_dir(), error)) {
    throw ConfigError(fmt::format("{}: not a results directory (expected experiment.json and points/ in it)", dir));
  }
  side.canonical_dir = fs::canonical(dir, error).string();
  directory.require_own_experiment_copy();
  side.experiment = load_experiment(directory.experiment_copy());
  const std::vector<Point> points = expand(side.experiment);
  const std::vector<StoredRecord> stored = read_stored_records(directory);
  for (const auto& file : stored) {
    if (!file.record) side.unreadable.push_back(file);
  }
  for (const Point& point : points) {
    const std::string identity = configuration_identity(point.settings);
    auto found = std::find_if(side.configurations.begin(), side.configurations.end(),
                              [&](const Configuration& c) { return c.identity == identity; });
    if (found == side.configurations.end()) {
      Configuration configuration;
      configuration.identity = identity;
      configuration.match_identity = configuration_identity(point.settings, true);
      configuration.settings = point.settings;
      configuration.first_id = point.id;
      configuration.label = configuration_label(side.experiment, point.settings);
      side.configurations.push_back(std::move(configuration));
      found = side.configurations.end() - 1;
    }
    const StoredRecord* file = record_of(point, stored);
    if (file == nullptr) continue;
    side.records.push_back(*file->record);
    add_record(*found, point.repeat, side.records.back());
  }
  return side;
}

}  // namespace harness
