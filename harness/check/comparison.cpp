#include "harness/check/comparison.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/results/results_directory.h"
#include "harness/results/result_set.h"
#include "harness/study/sweep.h"

namespace harness {
namespace fs = std::filesystem;
namespace {

// The settings of `settings`' counterpart: the same with the --against values.
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

// "backend=allreduce", "backend=allreduce ranks=1".
std::string values_text(const Json& values) {
  std::string text;
  for (const auto& [key, value] : values.items()) {
    text += (text.empty() ? "" : " ") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return text;
}

// What must agree for two records' timings to be compared.
std::string incomparable(const PointRecord& a, const PointRecord& b) {
  const auto hosts = [](const PointRecord& record) {
    const auto& list = record.measurements->hosts;
    return std::set<std::string>(list.begin(), list.end()).size();
  };
  const auto library = [](const PointRecord& record) {
    std::string text = record.measurements->mpi_library;
    // Records before 0.3.1 kept the NUL Open MPI counts in the string's length.
    while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
    return text;
  };
  if (a.schema_version != b.schema_version) {
    return fmt::format("record schema {} against {}", a.schema_version, b.schema_version);
  }
  if (hosts(a) != hosts(b)) return fmt::format("{} host(s) against {}", hosts(a), hosts(b));
  if (library(a) != library(b)) return fmt::format("MPI library \"{}\" against \"{}\"", library(a), library(b));
  if (a.settings.device != b.settings.device) {
    return fmt::format("device {} against {}", a.settings.device, b.settings.device);
  }
  return "";
}

// A metric's positive values of one configuration, by message size (0 for training) and repeat.
using ValuesBySize = std::map<int64_t, std::map<int, double>>;

ValuesBySize values_of(const CheckMetric& metric, const Configuration& configuration, std::map<int64_t, std::string>& sizes) {
  ValuesBySize values;
  for (const auto& [repeat, record] : configuration.ok) {
    for (const MetricValue& value : metric_values(metric, *record->measurements)) {
      sizes[value.bytes] = value.size;
      // Zero communication (one rank) has no ratio: left out, and a metric without values is no row.
      if (value.value > 0 && std::isfinite(value.value)) values[value.bytes][repeat] = value.value;
    }
  }
  return values;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (const double value : values) sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// The log values of one side of a comparison: a configuration's own, or (paired by repeat) its
// log ratio to a reference of the same run.
struct LogSide {
  std::vector<int> repeats;
  std::vector<double> logs;
  std::vector<double> own_logs;  // the candidate's own values at those repeats (for display)
};

LogSide log_side(const std::map<int, double>& values, const std::map<int, double>* reference) {
  LogSide side;
  for (const auto& [repeat, value] : values) {
    if (reference == nullptr) {
      side.repeats.push_back(repeat);
      side.logs.push_back(std::log(value));
      side.own_logs.push_back(std::log(value));
      continue;
    }
    const auto found = reference->find(repeat);
    if (found == reference->end()) continue;
    side.repeats.push_back(repeat);
    side.logs.push_back(std::log(value) - std::log(found->second));
    side.own_logs.push_back(std::log(value));
  }
  return side;
}

// The rows of one candidate configuration.
class CandidateComparison {
 public:
  CandidateComparison(const CheckOptions& options, const Configuration& candidate, std::string reference_text,
                      std::vector<CheckRow>& rows)
      : options_(options), candidate_(candidate), reference_text_(std::move(reference_text)), rows_(rows) {}

  CheckRow row(Verdict verdict, std::string metric, std::string note) const {
    CheckRow row;
    row.point = candidate_.first_id;
    row.label = candidate_.label;
    row.reference = reference_text_;
    row.settings = to_json(candidate_.settings);
    row.metric = std::move(metric);
    row.verdict = verdict;
    row.note = std::move(note);
    return row;
  }
  void add(Verdict verdict, std::string metric, std::string note) const {
    rows_.push_back(row(verdict, std::move(metric), std::move(note)));
  }

  // The sides of the comparison. Without --against, `current_reference` and `baseline_reference`
  // are null; without --baseline, `baseline_candidate` is.
  void compare(const Configuration* current_reference, const Configuration* baseline_candidate,
               const Configuration* baseline_reference, bool same_run) const;

 private:
  void compare_metric(const CheckMetric& metric, const Configuration* current_reference,
                      const Configuration* baseline_candidate, const Configuration* baseline_reference,
                      bool same_run) const;

  const CheckOptions& options_;
  const Configuration& candidate_;
  std::string reference_text_;
  std::vector<CheckRow>& rows_;
};

std::string first_reason(const Configuration& configuration) {
  const PointRecord& record = *configuration.not_ok.begin()->second;
  return fmt::format("{} ({})", status_name(record.status), record.reason.empty() ? "no reason recorded" : record.reason);
}

void CandidateComparison::compare(const Configuration* current_reference, const Configuration* baseline_candidate,
                                  const Configuration* baseline_reference, bool same_run) const {
  // The side the candidate is held against: its own baseline, or else the reference of its run.
  const Configuration* held_against = baseline_candidate != nullptr ? baseline_candidate : current_reference;
  if (!candidate_.not_ok.empty()) {
    const std::string failed = fmt::format("{} of {} repeat(s) failed: {}", candidate_.not_ok.size(),
                                           candidate_.not_ok.size() + candidate_.ok.size(), first_reason(candidate_));
    if (held_against != nullptr && held_against->not_ok.empty()) {
      add(Verdict::kRegression, "status", "newly failing: " + failed);
    } else {
      add(Verdict::kFailed, "status", "failing on both sides: " + failed);
    }
  }
  for (const Configuration* reference : {current_reference, baseline_reference}) {
    if (reference != nullptr && !reference->not_ok.empty() && reference->ok.empty()) {
      add(Verdict::kFailed, "status", fmt::format("the reference {} failed: {}", reference->first_id, first_reason(*reference)));
      return;
    }
  }
  if (candidate_.ok.empty()) return;
  // Timings of different machines' kinds, libraries or record formats say nothing of the code.
  for (const Configuration* other : {current_reference, baseline_candidate, baseline_reference}) {
    if (other == nullptr || other->ok.empty()) continue;
    const std::string why = incomparable(*candidate_.ok.begin()->second, *other->ok.begin()->second);
    if (!why.empty()) {
      add(Verdict::kNotComparable, "all", fmt::format("{} ({} against {})", why, candidate_.first_id, other->first_id));
      return;
    }
  }
  for (const auto& metric : check_metric_table()) {
    if (metric.kind != candidate_.settings.kind || !options_.selected(metric.name)) continue;
    compare_metric(metric, current_reference, baseline_candidate, baseline_reference, same_run);
  }
}

void CandidateComparison::compare_metric(const CheckMetric& metric, const Configuration* current_reference,
                                         const Configuration* baseline_candidate,
                                         const Configuration* baseline_reference, bool same_run) const {
  std::map<int64_t, std::string> sizes;
  const ValuesBySize current = values_of(metric, candidate_, sizes);
  ValuesBySize current_ref, base, base_ref;
  if (current_reference != nullptr) current_ref = values_of(metric, *current_reference, sizes);
  if (baseline_candidate != nullptr) base = values_of(metric, *baseline_candidate, sizes);
  if (baseline_reference != nullptr) base_ref = values_of(metric, *baseline_reference, sizes);
  const MetricLimits limits = options_.limits.at(std::string(metric.name));

  for (const auto& [bytes, size] : sizes) {
    CheckRow row = this->row(Verdict::kPass, std::string(metric.name), "");
    row.size = size;
    row.bytes = bytes;
    row.unit = metric.unit;
    row.lower_is_better = metric.better == Better::kLower;
    row.limits = limits;
    const auto at = [bytes = bytes](const ValuesBySize& values) -> const std::map<int, double>* {
      const auto found = values.find(bytes);
      return found == values.end() ? nullptr : &found->second;
    };
    const std::map<int, double> none;
    const std::map<int, double>& candidate_values = at(current) ? *at(current) : none;

    LogSide current_side, baseline_side;
    double reference_scale = 1;  // --against with --baseline: the current reference's geometric mean
    if (current_reference != nullptr) {
      // Paired by repeat with the reference of the same run.
      current_side = log_side(candidate_values, at(current_ref) ? at(current_ref) : &none);
      if (baseline_candidate == nullptr) {
        baseline_side.repeats = current_side.repeats;
        for (std::size_t i = 0; i < current_side.logs.size(); ++i) {
          baseline_side.logs.push_back(current_side.own_logs[i] - current_side.logs[i]);
        }
        current_side.logs = current_side.own_logs;
        row.paired = true;
      } else {
        baseline_side = log_side(at(base) ? *at(base) : none, at(base_ref) ? at(base_ref) : &none);
        std::vector<double> reference_logs;
        for (std::size_t i = 0; i < current_side.logs.size(); ++i) {
          reference_logs.push_back(current_side.own_logs[i] - current_side.logs[i]);
        }
        reference_scale = std::exp(mean_of(reference_logs));
      }
    } else {
      current_side = log_side(candidate_values, nullptr);
      baseline_side = log_side(at(base) ? *at(base) : none, nullptr);
      if (same_run) {
        // One run checked against itself: the same repeats, paired.
        LogSide paired_current, paired_baseline;
        for (std::size_t i = 0; i < current_side.repeats.size(); ++i) {
          const auto found = std::find(baseline_side.repeats.begin(), baseline_side.repeats.end(), current_side.repeats[i]);
          if (found == baseline_side.repeats.end()) continue;
          paired_current.logs.push_back(current_side.logs[i]);
          paired_baseline.logs.push_back(baseline_side.logs[static_cast<std::size_t>(found - baseline_side.repeats.begin())]);
        }
        current_side = paired_current;
        baseline_side = paired_baseline;
        row.paired = true;
      }
    }

    if (current_side.logs.empty() && baseline_side.logs.empty()) continue;  // not measured on either side
    if (current_side.logs.empty() || baseline_side.logs.empty()) {
      row.verdict = Verdict::kMissing;
      row.note = current_side.logs.empty() ? "no value in the current run" : "no value to compare with";
      rows_.push_back(std::move(row));
      continue;
    }
    const ChangeEstimate estimate = row.paired ? paired_change(current_side.logs, baseline_side.logs)
                                               : welch_change(current_side.logs, baseline_side.logs);
    if (current_reference != nullptr && baseline_candidate != nullptr) {
      // The candidate now, and what it would be had its ratio to the reference stayed.
      row.current = std::exp(mean_of(current_side.own_logs));
      row.baseline = reference_scale * std::exp(mean_of(baseline_side.logs));
    } else {
      row.current = std::exp(mean_of(current_side.logs));
      row.baseline = std::exp(mean_of(baseline_side.logs));
    }
    row.current_repeats = static_cast<int>(current_side.logs.size());
    row.baseline_repeats = static_cast<int>(baseline_side.logs.size());
    row.change = std::expm1(estimate.log_ratio);
    if (estimate.has_interval) {
      row.change_low = std::expm1(estimate.low);
      row.change_high = std::expm1(estimate.high);
    }
    const Judgement judgement = judge_metric(metric, limits, *row.baseline, *row.current, estimate,
                                             row.current_repeats, row.baseline_repeats, row.paired);
    row.verdict = judgement.verdict;
    row.note = judgement.note;
    rows_.push_back(std::move(row));
  }
}

}  // namespace

const Configuration* ResultsSide::find(const PointSettings& settings) const {
  const std::string identity = configuration_identity(settings);
  for (const auto& configuration : configurations) {
    if (configuration.identity == identity) return &configuration;
  }
  const std::string match_identity = configuration_identity(settings, true);
  for (const auto& configuration : configurations) {
    if (configuration.match_identity == match_identity) return &configuration;
  }
  return nullptr;
}

std::string configuration_identity(const PointSettings& settings, bool ignore_injection) {
  if (!ignore_injection) return to_json(settings).dump();
  PointSettings without_injection = settings;
  without_injection.inject_comm_delay_us = 0;
  return to_json(without_injection).dump();
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
  side.experiment = load_experiment(directory.experiment_copy());
  const std::vector<Point> points = expand(side.experiment);
  const std::vector<StoredRecord> stored = read_stored_records(directory);
  Experiment without_repeats = side.experiment;
  without_repeats.repeats = 1;
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
      configuration.label = describe_point(without_repeats, point);
      side.configurations.push_back(std::move(configuration));
      found = side.configurations.end() - 1;
    }
    const StoredRecord* file = record_of(point, stored);
    if (file == nullptr) continue;
    side.records.push_back(*file->record);
    const PointRecord* record = &side.records.back();
    (record->ok() && record->measurements ? found->ok : found->not_ok)[point.repeat] = record;
  }
  return side;
}

CheckReport compare_results(const ResultsSide& current, const ResultsSide* baseline, const CheckOptions& options,
                            bool strict) {
  const bool against = !options.against.empty();
  if (!against && baseline == nullptr) {
    throw ConfigError("harness check: nothing to compare with: give --baseline DIR, --against VALUES, or a "
                      "\"check\": {\"against\": ...} block in the experiment");
  }
  CheckReport report;
  report.mode = against && baseline ? "against+baseline" : against ? "against" : "baseline";
  report.current_dir = current.dir;
  report.baseline_dir = baseline ? baseline->dir : "";
  report.against = options.against;
  report.strict = strict;
  // A reference value that no configuration has is a typo, not a sweep of missing points.
  for (const auto& [key, value] : options.against.items()) {
    std::vector<std::string> seen;
    for (const Configuration& configuration : current.configurations) {
      const std::string text = to_json(configuration.settings)[key].dump();
      if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
    }
    if (std::find(seen.begin(), seen.end(), value.dump()) == seen.end()) {
      throw ConfigError(fmt::format("{}.{}: no configuration of {} has {} (it has {})", options.against_where, key,
                                    current.dir, value.dump(), fmt::join(seen, ", ")));
    }
  }
  const bool same_run = baseline != nullptr && baseline->canonical_dir == current.canonical_dir;
  const std::string reference_text = against ? values_text(options.against) : "baseline";

  for (const Configuration& candidate : current.configurations) {
    if (against && is_reference(candidate.settings, options.against)) continue;
    CandidateComparison comparison(options, candidate, reference_text, report.rows);
    const Configuration* current_reference = nullptr;
    const Configuration* baseline_candidate = nullptr;
    const Configuration* baseline_reference = nullptr;
    PointSettings counterpart;
    if (against) {
      counterpart = with_values(candidate.settings, options.against);
      current_reference = current.find(counterpart);
      if (current_reference == nullptr) {
        comparison.add(Verdict::kMissing, "all", fmt::format("no configuration with {} in {}", reference_text, current.dir));
        continue;
      }
    }
    if (baseline != nullptr) {
      baseline_candidate = baseline->find(candidate.settings);
      if (baseline_candidate == nullptr) {
        comparison.add(Verdict::kMissing, "all", fmt::format("not in the baseline {}", baseline->dir));
        continue;
      }
      if (against) {
        baseline_reference = baseline->find(counterpart);
        if (baseline_reference == nullptr) {
          comparison.add(Verdict::kMissing, "all",
                         fmt::format("no configuration with {} in the baseline {}", reference_text, baseline->dir));
          continue;
        }
      }
    }
    if (candidate.ok.empty() && candidate.not_ok.empty()) {
      comparison.add(Verdict::kMissing, "all", "no record in the current run (not run, or still running)");
      continue;
    }
    comparison.compare(current_reference, baseline_candidate, baseline_reference, same_run);
  }
  // What the baseline measured that the current run no longer has.
  if (baseline != nullptr) {
    for (const Configuration& old : baseline->configurations) {
      if (against && is_reference(old.settings, options.against)) continue;
      if (current.find(old.settings) != nullptr || (old.ok.empty() && old.not_ok.empty())) continue;
      CheckRow row;
      row.point = old.first_id;
      row.label = old.label;
      row.reference = reference_text;
      row.settings = to_json(old.settings);
      row.metric = "all";
      row.verdict = Verdict::kMissing;
      row.note = fmt::format("in the baseline, not in the current run's experiment");
      report.rows.push_back(std::move(row));
    }
  }
  sort_rows(report.rows);
  return report;
}

}  // namespace harness
