#include "harness/check/candidate_comparison.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "harness/check/build_pairs.h"
#include "harness/check/comparability.h"
#include "harness/check/failing_repeats.h"
#include "harness/check/metric_comparison.h"
#include "harness/check/record_places.h"
#include "harness/check/wrong_sums.h"

namespace harness {
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

}  // namespace

void CandidateComparison::note(const std::string& line) const {
  if (std::find(report_.notes.begin(), report_.notes.end(), line) == report_.notes.end()) report_.notes.push_back(line);
}

bool CandidateComparison::same_machine(const Configuration& other, bool baseline_side) const {
  const ConfigurationMachines mine = machines_of(candidate_);
  const ConfigurationMachines theirs = machines_of(other);
  if (baseline_side && (mine.ok_record_without_machine || theirs.ok_record_without_machine)) {
    // Records before schema 7 (and builds older than that) do not say where they ran.
    note(fmt::format("{} records do not say which machine they ran on (record schema before 7): compared as if "
                     "they ran on the same one",
                     theirs.ok_record_without_machine ? "the baseline's" : "the current run's"));
  }
  for (const auto& [my_id, my_machine] : mine.machines) {
    for (const auto& [their_id, their_machine] : theirs.machines) {
      const std::string difference = machine_difference(my_machine, their_machine);
      if (difference.empty()) continue;
      if (!baseline_side) {
        // The points of one run may land on different nodes of a cluster: said here (the pairs split
        // over two nodes are left out, compare_candidate).
        note(fmt::format("configurations of the current run ran on different machines ({} against {}): their "
                         "comparison includes the difference of the machines",
                         describe_machine(my_machine), describe_machine(their_machine)));
        return true;
      }
      if (options_.allow_other_machine) {
        note(fmt::format("compared across machines (--allow-other-machine): {} against {}",
                         describe_machine(my_machine), describe_machine(their_machine)));
        return true;
      }
      add(Verdict::kNotComparable, "all",
          fmt::format("another machine: {} ({} against {}); --allow-other-machine compares them anyway", difference,
                      my_id, their_id));
      return false;
    }
  }
  return true;
}

void CandidateComparison::judge_sums(const Counterparts& with) const {
  const WrongSums mine = wrong_sums_of(candidate_);
  if (mine.repeats == 0) return;
  const Configuration* held = with.baseline_candidate != nullptr ? with.baseline_candidate : with.current_reference;
  const std::string other = with.baseline_candidate != nullptr ? "the baseline" : "its reference";
  if (held == nullptr) {
    add(Verdict::kFailed, "wrong", "summing wrong: " + wrong_sums_text(mine));
    return;
  }
  const WrongSums theirs = wrong_sums_of(*held);
  if (theirs.repeats == 0) {
    add(Verdict::kRegression, "wrong", fmt::format("summing wrong where {} does not: {}", other, wrong_sums_text(mine)));
  } else {
    add(Verdict::kFailed, "wrong",
        fmt::format("summing wrong on both sides: {} (and {}: {})", wrong_sums_text(mine), other,
                    wrong_sums_text(theirs)));
  }
}

void CandidateComparison::note_differences(const Counterparts& with) const {
  for (const Configuration* other : {with.current_reference, with.baseline_candidate}) {
    if (other == nullptr) continue;
    const std::string settings = differing_build_settings(candidate_, *other);
    if (!settings.empty()) {
      note(fmt::format("{} {} ran with other settings than {} (a build's own defaults where the experiment sets "
                       "none): {}",
                       candidate_.first_id, candidate_.label,
                       other == with.current_reference ? "its reference " + other->first_id : "the baseline's",
                       settings));
    }
  }
  if (with.current_reference != nullptr) {
    const std::string order = unbalanced_order(candidate_, *with.current_reference);
    if (!order.empty()) {
      note(fmt::format("{} {} {}: the second point of a back-to-back pair can run slower, so an odd number of "
                       "repeats leans one way (use an even number)",
                       candidate_.first_id, candidate_.label, order));
    }
  }
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
  // Where the records ran comes first: a point that failed on another machine says nothing of the
  // code (pairs split over two nodes are left out before, compare_candidate).
  for (const Configuration* other : {with.baseline_candidate, with.baseline_reference}) {
    if (other != nullptr && !same_machine(*other, true)) return;
  }
  if (with.current_reference != nullptr) same_machine(*with.current_reference, false);
  if (!judge_statuses(with)) return;
  judge_sums(with);
  if (!candidate_.interrupted.empty()) {
    note(fmt::format("{} {}: compared without the repeat(s) the scheduler ended{}", candidate_.first_id,
                     candidate_.label, interrupted_text(candidate_)));
  }
  // Timings of different machines' kinds, libraries or record formats say nothing of the code.
  for (const Configuration* other : {with.current_reference, with.baseline_candidate, with.baseline_reference}) {
    if (other == nullptr) continue;
    const PointRecord& candidate_record = *candidate_.ok.begin()->second;
    const PointRecord& other_record = *other->ok.begin()->second;
    const std::string why = incomparable(candidate_record, other_record, options_.allow_other_mpi);
    if (!why.empty()) {
      add(Verdict::kNotComparable, "all", fmt::format("{} ({} against {})", why, candidate_.first_id, other->first_id));
      return;
    }
    if (const std::string library = mpi_release(candidate_record.measurements->mpi_library),
        other_library = mpi_release(other_record.measurements->mpi_library);
        library != other_library) {
      note(fmt::format("{} {}: MPI library \"{}\" compared with \"{}\" ({}; --allow-other-mpi)", candidate_.first_id,
                       candidate_.label, library, other_library, other->first_id));
    }
  }
  note_differences(with);
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

}  // namespace harness
