#include "harness/check/check_statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

namespace harness {
namespace {

double mean_of(const std::vector<double>& values) {
  return values.empty() ? 0 : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// Sample variance (n - 1); 0 for fewer than two values.
double variance_of(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double mean = mean_of(values);
  double sum = 0;
  for (const double value : values) sum += (value - mean) * (value - mean);
  return sum / static_cast<double>(values.size() - 1);
}

}  // namespace

double t_quantile_975(double degrees_of_freedom) {
  const boost::math::students_t distribution(std::max(degrees_of_freedom, 1e-3));
  return boost::math::quantile(boost::math::complement(distribution, 0.025));
}

ChangeEstimate paired_change(const std::vector<double>& current, const std::vector<double>& baseline) {
  std::vector<double> differences;
  for (std::size_t i = 0; i < current.size() && i < baseline.size(); ++i) differences.push_back(current[i] - baseline[i]);
  ChangeEstimate estimate;
  estimate.paired = true;
  estimate.current_count = estimate.baseline_count = static_cast<int>(differences.size());
  estimate.log_ratio = mean_of(differences);
  estimate.low = estimate.high = estimate.log_ratio;
  if (!differences.empty()) {
    const auto [least, most] = std::minmax_element(differences.begin(), differences.end());
    estimate.least_difference = *least;
    estimate.most_difference = *most;
  }
  if (differences.size() < 2) return estimate;
  const double n = static_cast<double>(differences.size());
  estimate.spread = std::sqrt(variance_of(differences));
  // Values beyond what a double's arithmetic holds (a hand-edited record): no interval.
  if (!std::isfinite(estimate.log_ratio) || !std::isfinite(estimate.spread)) return estimate;
  const double half_width = t_quantile_975(n - 1) * estimate.spread / std::sqrt(n);
  estimate.low = estimate.log_ratio - half_width;
  estimate.high = estimate.log_ratio + half_width;
  estimate.has_interval = true;
  return estimate;
}

namespace {

// Welch-Satterthwaite degrees of freedom of two sides with these variances of their means.
double welch_df(double a, double b, double n_c, double n_b) {
  return (a + b) * (a + b) / (a * a / (n_c - 1) + b * b / (n_b - 1));
}

}  // namespace

ChangeEstimate welch_change(const std::vector<double>& current, const std::vector<double>& baseline) {
  ChangeEstimate estimate;
  estimate.current_count = static_cast<int>(current.size());
  estimate.baseline_count = static_cast<int>(baseline.size());
  estimate.log_ratio = mean_of(current) - mean_of(baseline);
  estimate.low = estimate.high = estimate.log_ratio;
  if (!current.empty() && !baseline.empty()) {
    const auto [current_least, current_most] = std::minmax_element(current.begin(), current.end());
    const auto [baseline_least, baseline_most] = std::minmax_element(baseline.begin(), baseline.end());
    estimate.least_difference = *current_least - *baseline_most;
    estimate.most_difference = *current_most - *baseline_least;
  }
  if (current.size() < 2 || baseline.size() < 2) return estimate;
  const double n_c = static_cast<double>(current.size());
  const double n_b = static_cast<double>(baseline.size());
  estimate.current_spread = std::sqrt(variance_of(current));
  estimate.baseline_spread = std::sqrt(variance_of(baseline));
  const double a = variance_of(current) / n_c;
  const double b = variance_of(baseline) / n_b;
  // Two constant sides have no spread at all: an exact interval.
  const double df = a + b > 0 ? welch_df(a, b, n_c, n_b) : n_c + n_b - 2;
  // Values beyond what a double's arithmetic holds (a hand-edited record): no interval.
  if (!std::isfinite(estimate.log_ratio) || !std::isfinite(a + b) || !std::isfinite(df)) return estimate;
  const double half_width = t_quantile_975(df) * std::sqrt(a + b);
  estimate.low = estimate.log_ratio - half_width;
  estimate.high = estimate.log_ratio + half_width;
  estimate.has_interval = true;
  return estimate;
}

int repeats_needed(const ChangeEstimate& estimate) {
  const double change = std::abs(estimate.log_ratio);
  if (change == 0) return 0;
  const int now = std::max(estimate.current_count, estimate.baseline_count);
  const int least = std::max(kMinRepeats, estimate.has_interval ? now + 1 : kMinRepeats);
  // The half width with n repeats per side, if the spreads stayed what they are.
  const auto half_width = [&](int n) {
    const double repeats = static_cast<double>(n);
    if (estimate.paired) return t_quantile_975(repeats - 1) * estimate.spread / std::sqrt(repeats);
    const double a = estimate.current_spread * estimate.current_spread / repeats;
    const double b = estimate.baseline_spread * estimate.baseline_spread / repeats;
    if (a + b == 0) return 0.0;
    return t_quantile_975(welch_df(a, b, repeats, repeats)) * std::sqrt(a + b);
  };
  if (half_width(kMaxRepeatsNeeded) >= change) return kMaxRepeatsNeeded;
  // The half width shrinks with n: the smallest n below `change`, by bisection.
  int low = least - 1;
  int high = kMaxRepeatsNeeded;
  if (half_width(least) < change) return least;
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    (half_width(middle) < change ? high : low) = middle;
  }
  return high;
}

std::string verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression: return "REGRESSION";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
    case Verdict::kMissing: return "MISSING";
    case Verdict::kNotComparable: return "NOT COMPARABLE";
    case Verdict::kFailed: return "FAILED";
    case Verdict::kImproved: return "IMPROVED";
    case Verdict::kPass: return "PASS";
  }
  return "PASS";
}

double relative_change(double difference, double baseline_value, bool log_scale) {
  if (log_scale) return std::expm1(difference);
  if (baseline_value > 0) return difference / baseline_value;
  if (difference == 0) return 0;
  return difference > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

namespace {

// "2 repeat(s) per side", or "2 repeat(s) now, 3 on the other side" where the sides differ.
std::string repeats_per_side(const ChangeEstimate& estimate) {
  if (estimate.current_count == estimate.baseline_count) return fmt::format("{} repeat(s) per side", estimate.current_count);
  return fmt::format("{} repeat(s) now, {} on the other side", estimate.current_count, estimate.baseline_count);
}

}  // namespace

Judgement judge_metric(const CheckMetric& metric, const MetricLimits& limits, double baseline_value,
                       double current_value, const ChangeEstimate& estimate, bool log_scale) {
  const double change = relative_change(estimate.log_ratio, baseline_value, log_scale);
  if (std::abs(current_value - baseline_value) < limits.floor) {
    const bool beyond_threshold = std::abs(change) > limits.threshold;
    return {Verdict::kPass,
            beyond_threshold ? fmt::format("difference below the floor of {} {}", format_number(limits.floor), metric.unit)
                             : ""};
  }
  const bool lower_is_better = metric.better == Better::kLower;
  const bool worse = lower_is_better ? change > limits.threshold : change < -limits.threshold;
  const bool better = lower_is_better ? change < -limits.threshold : change > limits.threshold;
  const int fewest = std::min(estimate.current_count, estimate.baseline_count);
  if (fewest < kMinRepeats) {
    const int needed = worse ? std::max(kMinRepeats, repeats_needed(estimate)) : kMinRepeats;
    return {Verdict::kInconclusive,
            needed >= kMaxRepeatsNeeded
                ? fmt::format("{}; at least {}, and more than {} to decide this change", repeats_per_side(estimate),
                              kMinRepeats, kMaxRepeatsNeeded)
                : fmt::format("{}; at least {} needed", repeats_per_side(estimate), needed)};
  }
  if (!estimate.has_interval) {
    return {Verdict::kInconclusive, "no interval: the values are beyond what the arithmetic of doubles holds"};
  }
  const bool excludes_no_change = estimate.low > 0 || estimate.high < 0;
  const bool towards_worse = lower_is_better ? estimate.low > 0 : estimate.high < 0;
  // The change of the repeat that changed least the bad way.
  const double least_worse = relative_change(lower_is_better ? estimate.least_difference : estimate.most_difference,
                                             baseline_value, log_scale);
  const bool every_repeat_worse = lower_is_better ? least_worse > limits.threshold : least_worse < -limits.threshold;
  if (worse) {
    if (excludes_no_change && towards_worse) return {Verdict::kRegression, ""};
    if (every_repeat_worse) {
      return {Verdict::kRegression,
              fmt::format("every repeat beyond the threshold (the least by {:+.1f}%); the spread of the others widens "
                          "the interval",
                          100 * least_worse)};
    }
    const int needed = repeats_needed(estimate);
    if (needed >= kMaxRepeatsNeeded) {
      return {Verdict::kInconclusive,
              fmt::format("the interval includes no change; more than {} repeats per side would decide", kMaxRepeatsNeeded)};
    }
    return {Verdict::kInconclusive,
            needed > 0 ? fmt::format("the interval includes no change; about {} repeats per side would decide", needed)
                       : "the interval includes no change"};
  }
  if (better && excludes_no_change && !towards_worse) return {Verdict::kImproved, ""};
  return {Verdict::kPass, ""};
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "n/a";
  std::string text = fmt::format("{:.6f}", value);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

}  // namespace harness
