#include "harness/check/comparison.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/check/comparability.h"
#include "harness/check/empty_comparison.h"
#include "harness/check/failing_repeats.h"
#include "harness/check/metric_comparison.h"
#include "harness/common/errors.h"
#include "harness/results/result_set.h"
#include "harness/results/results_directory.h"
#include "harness/study/sweep.h"

namespace harness {
namespace fs = std::filesystem;
namespace {

// A metric's values of one configuration, by message size (0 for training) and repeat.
using ValuesBySize = std::map<int64_t, RepeatValues>;

ValuesBySize values_of(const CheckMetric& metric, const Configuration* configuration,
                       std::map<int64_t, std::string>& sizes) {
  ValuesBySize values;
  if (configuration == nullptr) return values;
  for (const auto& [repeat, record] : configuration->ok) {
    for (const MetricValue& value : metric_values(metric, *record->measurements)) {
      sizes[value.bytes] = value.size;
      if (std::isfinite(value.value) && value.value >= 0) values[value.bytes][repeat] = value.value;
    }
  }
  return values;
}

// The configurations a candidate is compared with. Without --against the references are null;
// without --baseline the baseline's candidate is.
struct Counterparts {
  const Configuration* current_reference = nullptr;
  const Configuration* baseline_candidate = nullptr;
  const Configuration* baseline_reference = nullptr;
};

// The rows of one candidate configuration.
class CandidateComparison {
 public:
  CandidateComparison(const CheckOptions& options, const Configuration& candidate, std::string reference_text,
                      CheckReport& report)
      : options_(options), candidate_(candidate), reference_text_(std::move(reference_text)), report_(report),
        rows_(report.rows) {}

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

  void compare(const Counterparts& with, bool same_run) const;

 private:
  // False when a failure leaves nothing to compare.
  bool judge_statuses(const Counterparts& with) const;
  void compare_metric(const CheckMetric& metric, const Counterparts& with, bool same_run) const;
  // False when `other`, a configuration of the baseline, ran on another machine than the candidate
  // and that is not allowed (a row says so); otherwise notes what the report should say about
  // the machines (another machine within the current run is noted, never refused).
  bool same_machine(const Configuration& other, bool baseline_side) const;
  void note(const std::string& line) const;

  const CheckOptions& options_;
  const Configuration& candidate_;
  std::string reference_text_;
  CheckReport& report_;
  std::vector<CheckRow>& rows_;
};

void CandidateComparison::note(const std::string& line) const {
  if (std::find(report_.notes.begin(), report_.notes.end(), line) == report_.notes.end()) report_.notes.push_back(line);
}

bool CandidateComparison::same_machine(const Configuration& other, bool baseline_side) const {
  const auto& mine = candidate_.ok.begin()->second->measurements->machine;
  const auto& theirs = other.ok.begin()->second->measurements->machine;
  if (!mine || !theirs) {
    // Records before schema 7 (and builds older than that) do not say where they ran.
    if (baseline_side) {
      note(fmt::format("{} records do not say which machine they ran on (record schema before 7): compared as if "
                       "they ran on the same one",
                       !theirs ? "the baseline's" : "the current run's"));
    }
    return true;
  }
  const std::string difference = machine_difference(*mine, *theirs);
  if (difference.empty()) return true;
  if (!baseline_side) {
    // The points of one run may land on different nodes of a cluster: said, not refused.
    note(fmt::format("configurations of the current run ran on different machines ({} against {}): their "
                     "comparison includes the difference of the machines",
                     describe_machine(*mine), describe_machine(*theirs)));
    return true;
  }
  if (options_.allow_other_machine) {
    note(fmt::format("compared across machines (--allow-other-machine): {} against {}", describe_machine(*mine),
                     describe_machine(*theirs)));
    return true;
  }
  add(Verdict::kNotComparable, "all",
      fmt::format("another machine: {} ({} against {}); --allow-other-machine compares them anyway", difference,
                  candidate_.first_id, other.first_id));
  return false;
}

bool CandidateComparison::judge_statuses(const Counterparts& with) const {
  // The candidate: failing now where what it is held against did not, or failing more often than
  // it (a flaky baseline must not excuse a configuration that now always fails), is a regression.
  const Configuration* held = with.baseline_candidate != nullptr ? with.baseline_candidate : with.current_reference;
  if (!candidate_.not_ok.empty()) {
    const std::string failed = fmt::format("{} of {} repeat(s) failed: {}", candidate_.not_ok.size(),
                                           candidate_.not_ok.size() + candidate_.ok.size(), first_reason(candidate_));
    if (held != nullptr && !has_records(*held)) {
      // Nothing ran there (not yet, or the scheduler ended every repeat): no status to compare with.
      add(Verdict::kMissing, "all",
          fmt::format("{} has no record to hold this configuration's failures against{}; here {}",
                      with.baseline_candidate != nullptr ? "the baseline" : "its reference " + held->first_id,
                      interrupted_text(*held), failed));
      return false;
    }
    const std::string more =
        held == nullptr ? ""
                        : failing_more(failures_of(candidate_), failures_of(*held),
                                       with.baseline_candidate != nullptr ? "the baseline" : "its reference");
    if (held != nullptr && held->not_ok.empty()) {
      add(Verdict::kRegression, "status",
          (with.baseline_candidate != nullptr ? "newly failing: " : "failing where its reference does not: ") + failed);
    } else if (!more.empty()) {
      add(Verdict::kRegression, "status", fmt::format("failing {}: {}", more, failed));
    } else {
      add(Verdict::kFailed, "status", "failing on both sides: " + failed);
    }
  }
  // The reference of the current run: without records nothing can be compared; failing where the
  // baseline's reference did not, or in every repeat where it had an ok one, is a regression too
  // (it is checked as nobody's candidate).
  if (const Configuration* reference = with.current_reference) {
    if (!has_records(*reference)) {
      add(Verdict::kMissing, "all",
          fmt::format("the reference {} has no record{}", reference->first_id, interrupted_text(*reference)));
      return false;
    }
    if (reference->ok.empty()) {
      const Configuration* before = with.baseline_reference;
      const bool newly = before != nullptr && has_records(*before) && before->not_ok.empty();
      const bool always = before != nullptr && !before->ok.empty();
      const std::string how =
          newly ? "newly fails"
                : always ? fmt::format("fails in every repeat where the baseline's {} of {} were ok", before->ok.size(),
                                       before->ok.size() + before->not_ok.size())
                         : "failed";
      add(newly || always ? Verdict::kRegression : Verdict::kFailed, "status",
          fmt::format("the reference {} {}: {}", reference->first_id, how, first_reason(*reference)));
      return false;
    }
    // Some of its repeats failed: the comparison goes on without them, and says so.
    if (!reference->not_ok.empty()) {
      note(fmt::format("the reference {} failed in {} of {} repeat(s), compared without them: {}", reference->first_id,
                       reference->not_ok.size(), reference->not_ok.size() + reference->ok.size(),
                       first_reason(*reference)));
    }
  }
  if (candidate_.ok.empty()) return false;  // its status row says why
  for (const Configuration* other : {with.baseline_candidate, with.baseline_reference}) {
    if (other != nullptr && other->ok.empty()) {
      add(Verdict::kMissing, "all",
          fmt::format("{} of the baseline has no ok record{}",
                      other == with.baseline_candidate ? "the configuration" : "the reference", interrupted_text(*other)));
      return false;
    }
  }
  return true;
}

void CandidateComparison::compare(const Counterparts& with, bool same_run) const {
  if (!judge_statuses(with)) return;
  if (!candidate_.interrupted.empty()) {
    note(fmt::format("{} {}: compared without the repeat(s) the scheduler ended{}", candidate_.first_id,
                     candidate_.label, interrupted_text(candidate_)));
  }
  // Timings of different machines' kinds, libraries or record formats say nothing of the code.
  for (const Configuration* other : {with.current_reference, with.baseline_candidate, with.baseline_reference}) {
    if (other == nullptr) continue;
    const std::string why = incomparable(*candidate_.ok.begin()->second, *other->ok.begin()->second);
    if (!why.empty()) {
      add(Verdict::kNotComparable, "all", fmt::format("{} ({} against {})", why, candidate_.first_id, other->first_id));
      return;
    }
    if (!same_machine(*other, other != with.current_reference)) return;
  }
  for (const auto& metric : check_metric_table()) {
    if (metric.kind != candidate_.settings.kind || !options_.selected(metric.name)) continue;
    compare_metric(metric, with, same_run);
  }
}

void CandidateComparison::compare_metric(const CheckMetric& metric, const Counterparts& with, bool same_run) const {
  std::map<int64_t, std::string> sizes;
  const ValuesBySize current = values_of(metric, &candidate_, sizes);
  const ValuesBySize current_reference = values_of(metric, with.current_reference, sizes);
  const ValuesBySize baseline = values_of(metric, with.baseline_candidate, sizes);
  const ValuesBySize baseline_reference = values_of(metric, with.baseline_reference, sizes);
  const MetricLimits limits = options_.limits.at(std::string(metric.name));
  const RepeatValues none;
  for (const auto& [bytes, size] : sizes) {
    // A side that exists but lacks this size has no values at it (not null: null means "no such side").
    const auto at = [bytes = bytes, &none](const ValuesBySize& values, const Configuration* side) -> const RepeatValues* {
      if (side == nullptr) return nullptr;
      const auto found = values.find(bytes);
      return found == values.end() ? &none : &found->second;
    };
    MetricSides sides;
    sides.current = at(current, &candidate_);
    sides.current_reference = at(current_reference, with.current_reference);
    sides.baseline = at(baseline, with.baseline_candidate);
    sides.baseline_reference = at(baseline_reference, with.baseline_reference);
    sides.same_run = same_run;
    CheckRow row = this->row(Verdict::kPass, std::string(metric.name), "");
    row.size = size;
    row.bytes = bytes;
    row.unit = metric.unit;
    row.lower_is_better = metric.better == Better::kLower;
    row.limits = limits;
    if (!compare_metric_values(metric, limits, sides, row)) continue;
    if (metric.name == "busbw") apply_time_floor(row, candidate_.settings.ranks, options_.limits.at("reduce_time"));
    rows_.push_back(std::move(row));
  }
}

// A row for a file of points/ that is no readable record: its point is unknown, so it is listed.
CheckRow unreadable_row(const std::string& side, const StoredRecord& file) {
  CheckRow row;
  row.point = fs::path(file.path).filename().string();
  row.label = "(" + side + ")";
  row.metric = "all";
  row.verdict = Verdict::kNotComparable;
  row.note = "not a record this harness reads: " + file.problem;
  return row;
}

// A reference value that no configuration has is a typo, not a sweep of missing points.
void check_against_values_occur(const ResultsSide& current, const CheckOptions& options) {
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
}

// Finds a candidate's counterparts (its reference in the current run with --against, itself and
// its reference in the baseline with --baseline) and compares it with them; a missing one is a row.
void compare_candidate(const Configuration& candidate, const ResultsSide& current, const ResultsSide* baseline,
                       const CheckOptions& options, const std::string& reference_text, bool same_run,
                       CheckReport& report) {
  const bool against = !options.against.empty();
  // A reference that names the delay must be found with it.
  const bool other_delay = !options.against.contains("inject_comm_delay_us");
  CandidateComparison comparison(options, candidate, reference_text, report);
  Counterparts with;
  PointSettings counterpart;
  if (against) {
    counterpart = with_values(candidate.settings, options.against);
    with.current_reference = current.find(counterpart, &candidate, other_delay);
    if (with.current_reference == nullptr) {
      comparison.add(Verdict::kMissing, "all", fmt::format("no configuration with {} in {}", reference_text, current.dir));
      return;
    }
  }
  if (baseline != nullptr) {
    with.baseline_candidate = baseline->find(candidate.settings, nullptr, true);
    if (with.baseline_candidate == nullptr) {
      comparison.add(Verdict::kMissing, "all", fmt::format("not in the baseline {}", baseline->dir));
      return;
    }
    if (against) {
      with.baseline_reference = baseline->find(counterpart, with.baseline_candidate, other_delay);
      if (with.baseline_reference == nullptr) {
        comparison.add(Verdict::kMissing, "all",
                       fmt::format("no configuration with {} in the baseline {}", reference_text, baseline->dir));
        return;
      }
    }
  }
  if (!has_records(candidate)) {
    comparison.add(Verdict::kMissing, "all",
                   candidate.interrupted.empty() ? std::string("no record in the current run (not run, or still running)")
                                                 : "no ok or failed repeat in the current run" + interrupted_text(candidate));
    return;
  }
  comparison.compare(with, same_run);
}

// What the baseline measured that the current run no longer has.
void add_dropped_configurations(const ResultsSide& current, const ResultsSide& baseline, const CheckOptions& options,
                                const std::string& reference_text, CheckReport& report) {
  const bool against = !options.against.empty();
  for (const Configuration& old : baseline.configurations) {
    if (against && is_reference(old.settings, options.against)) continue;
    if (current.find(old.settings, nullptr, true) != nullptr || (old.ok.empty() && old.not_ok.empty())) continue;
    CheckRow row;
    row.point = old.first_id;
    row.label = old.label;
    row.reference = reference_text;
    row.settings = to_json(old.settings);
    row.metric = "all";
    row.verdict = Verdict::kMissing;
    row.note = "in the baseline, not in the current run's experiment";
    report.rows.push_back(std::move(row));
  }
}

// Throws when the rows compare nothing, saying why.
void check_something_compared(const CheckReport& report, const ResultsSide& current, const ResultsSide* baseline,
                              const CheckOptions& options) {
  const std::string why = nothing_compared(report.rows, current, baseline, options);
  if (why.empty()) return;
  const std::size_t unreadable = current.unreadable.size() + (baseline != nullptr ? baseline->unreadable.size() : 0);
  throw ConfigError(fmt::format("nothing compared: {}{}", why,
                                unreadable == 0 ? ""
                                                : fmt::format(" (and {} file(s) in points/ that are no record this "
                                                              "harness reads)",
                                                              unreadable)));
}

}  // namespace

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
  check_against_values_occur(current, options);
  const bool same_run = baseline != nullptr && baseline->canonical_dir == current.canonical_dir;
  const std::string reference_text = against ? values_text(options.against) : "baseline";

  int candidates = 0;
  for (const Configuration& candidate : current.configurations) {
    if (against && is_reference(candidate.settings, options.against)) continue;
    ++candidates;
    compare_candidate(candidate, current, baseline, options, reference_text, same_run, report);
  }
  if (candidates == 0) {
    throw ConfigError(fmt::format("{}: every configuration of {} has {}: nothing to compare with it",
                                  options.against_where, current.dir, reference_text));
  }
  if (baseline != nullptr) add_dropped_configurations(current, *baseline, options, reference_text, report);
  check_something_compared(report, current, baseline, options);
  if (baseline != nullptr) {
    for (const auto& file : baseline->unreadable) report.rows.push_back(unreadable_row("baseline", file));
  }
  for (const auto& file : current.unreadable) report.rows.push_back(unreadable_row("current run", file));
  sort_rows(report.rows);
  return report;
}

}  // namespace harness
