#include "harness/check/metric_comparison.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "harness/check/check_statistics.h"

namespace harness {
namespace {

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (const double value : values) sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

const RepeatValues kNone;

const RepeatValues& or_none(const RepeatValues* values) { return values != nullptr ? *values : kNone; }

// The side's values at the repeats that `other` also has, in repeat order, with those of `other`.
void paired_values(const RepeatValues& values, const RepeatValues& other, std::vector<double>& mine,
                   std::vector<double>& theirs) {
  for (const auto& [repeat, value] : values) {
    const auto found = other.find(repeat);
    if (found == other.end()) continue;
    mine.push_back(value);
    theirs.push_back(found->second);
  }
}

std::vector<double> all_of(const RepeatValues& values) {
  std::vector<double> out;
  for (const auto& [repeat, value] : values) out.push_back(value);
  return out;
}

std::vector<double> logs_of(const std::vector<double>& values) {
  std::vector<double> logs;
  for (const double value : values) logs.push_back(std::log(value));
  return logs;
}

// Each value's gap to its reference: the log ratio, or (`log_scale` false: a value is 0) the
// difference in the metric's unit.
std::vector<double> gaps_to(const std::vector<double>& values, const std::vector<double>& references, bool log_scale) {
  std::vector<double> gaps;
  for (std::size_t i = 0; i < values.size(); ++i) {
    gaps.push_back(log_scale ? std::log(values[i]) - std::log(references[i]) : values[i] - references[i]);
  }
  return gaps;
}

bool all_positive(std::initializer_list<const RepeatValues*> sides) {
  for (const RepeatValues* side : sides) {
    for (const auto& [repeat, value] : or_none(side)) {
      if (!(value > 0)) return false;
    }
  }
  return true;
}

bool all_zero(std::initializer_list<const RepeatValues*> sides) {
  for (const RepeatValues* side : sides) {
    for (const auto& [repeat, value] : or_none(side)) {
      if (value != 0) return false;
    }
  }
  return true;
}

bool missing(CheckRow& row, const char* note) {
  row.verdict = Verdict::kMissing;
  row.note = note;
  return true;
}

}  // namespace

bool compare_metric_values(const CheckMetric& metric, const MetricLimits& limits, const MetricSides& sides,
                           CheckRow& row) {
  const bool against = sides.current_reference != nullptr;
  const bool with_baseline = sides.baseline != nullptr;
  const RepeatValues& current = or_none(sides.current);
  const RepeatValues& current_reference = or_none(sides.current_reference);
  const RepeatValues& baseline = or_none(sides.baseline);
  const RepeatValues& baseline_reference = or_none(sides.baseline_reference);
  const std::initializer_list<const RepeatValues*> every_side = {sides.current, sides.current_reference, sides.baseline,
                                                                 sides.baseline_reference};
  // Held against: the baseline's candidate, or else the current run's reference.
  const RepeatValues& held = with_baseline ? baseline : current_reference;
  if (current.empty() && held.empty()) return false;
  if (all_zero(every_side)) return false;
  if (current.empty()) return missing(row, "no value in the current run");
  if (held.empty()) return missing(row, with_baseline ? "no value in the baseline" : "no value of the reference");

  const bool log_scale = all_positive(every_side);

  ChangeEstimate estimate;
  double current_value = 0;
  double baseline_value = 0;
  std::string unpaired_note;  // why repeats of one run were not compared in pairs
  if (against && with_baseline) {
    // The candidate's gaps to its reference in each run (paired within it: log ratios, or
    // differences where a value is 0), then Welch between runs.
    std::vector<double> now, now_reference, then, then_reference;
    paired_values(current, current_reference, now, now_reference);
    paired_values(baseline, baseline_reference, then, then_reference);
    if (now.empty()) return missing(row, "no repeat of the current run in common with its reference");
    if (then.empty()) return missing(row, "no repeat of the baseline in common with its reference");
    const std::vector<double> then_gaps = gaps_to(then, then_reference, log_scale);
    estimate = welch_change(gaps_to(now, now_reference, log_scale), then_gaps);
    // The candidate now, and what it would be had its gap to the reference stayed the baseline's.
    if (log_scale) {
      current_value = std::exp(mean_of(logs_of(now)));
      baseline_value = std::exp(mean_of(logs_of(now_reference)) + mean_of(then_gaps));
    } else {
      current_value = mean_of(now);
      baseline_value = mean_of(now_reference) + mean_of(then_gaps);
    }
  } else {
    std::vector<double> mine, theirs;
    bool paired = against || sides.same_run;
    if (paired) {
      paired_values(current, held, mine, theirs);
      // Failed repeats on either side left too few rounds in common to pair, while each side has
      // enough of its own: compared unpaired rather than left out.
      const auto least = static_cast<std::size_t>(kMinRepeats);
      if (mine.size() < least && current.size() >= least && held.size() >= least) {
        paired = false;
        unpaired_note = fmt::format("unpaired: {} repeat(s) in common with the reference", mine.size());
      } else if (mine.empty()) {
        return missing(row, "no repeat in common with the reference");
      }
    }
    if (!paired) {
      mine = all_of(current);
      theirs = all_of(held);
    }
    if (log_scale) {
      mine = logs_of(mine);
      theirs = logs_of(theirs);
    }
    estimate = paired ? paired_change(mine, theirs) : welch_change(mine, theirs);
    current_value = log_scale ? std::exp(mean_of(mine)) : mean_of(mine);
    baseline_value = log_scale ? std::exp(mean_of(theirs)) : mean_of(theirs);
  }

  row.current = current_value;
  row.baseline = baseline_value;
  row.current_repeats = estimate.current_count;
  row.baseline_repeats = estimate.baseline_count;
  row.paired = estimate.paired;
  const double change = relative_change(estimate.log_ratio, baseline_value, log_scale);
  if (std::isfinite(change)) row.change = change;
  if (estimate.has_interval) {
    const double low = relative_change(estimate.low, baseline_value, log_scale);
    const double high = relative_change(estimate.high, baseline_value, log_scale);
    if (std::isfinite(low) && std::isfinite(high)) {
      row.change_low = low;
      row.change_high = high;
    }
  }
  const Judgement judgement = judge_metric(metric, limits, baseline_value, current_value, estimate, log_scale);
  row.verdict = judgement.verdict;
  row.note = judgement.note;
  if (!unpaired_note.empty()) row.note = row.note.empty() ? unpaired_note : unpaired_note + "; " + row.note;
  if (!log_scale && row.note.empty()) row.note = "compared as a difference: a value of 0 has no ratio";
  return true;
}

void apply_time_floor(CheckRow& row, int ranks, const MetricLimits& time_limits) {
  const bool judged = row.verdict == Verdict::kRegression || row.verdict == Verdict::kImproved ||
                      row.verdict == Verdict::kInconclusive;
  if (!judged || ranks < 2 || !row.current || !row.baseline || !(*row.current > 0) || !(*row.baseline > 0)) return;
  // time in us = kilobytes on the bus / busbw in GB/s
  const double bus_kilobytes = static_cast<double>(row.bytes) * 2 * (ranks - 1) / ranks / 1000;
  const double time_difference_us = std::abs(bus_kilobytes / *row.current - bus_kilobytes / *row.baseline);
  if (!(time_difference_us < time_limits.floor)) return;
  row.verdict = Verdict::kPass;
  row.note = fmt::format("time difference {} us, below reduce_time's floor of {} us", format_number(time_difference_us),
                         format_number(time_limits.floor));
}

}  // namespace harness
