#include "harness/check/check_statistics.h"

#include <algorithm>
#include <cmath>
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
  estimate.log_ratio = mean_of(differences);
  estimate.low = estimate.high = estimate.log_ratio;
  if (differences.size() < 2) return estimate;
  const double n = static_cast<double>(differences.size());
  estimate.spread = std::sqrt(variance_of(differences));
  const double half_width = t_quantile_975(n - 1) * estimate.spread / std::sqrt(n);
  estimate.low = estimate.log_ratio - half_width;
  estimate.high = estimate.log_ratio + half_width;
  estimate.has_interval = true;
  return estimate;
}

ChangeEstimate welch_change(const std::vector<double>& current, const std::vector<double>& baseline) {
  ChangeEstimate estimate;
  estimate.log_ratio = mean_of(current) - mean_of(baseline);
  estimate.low = estimate.high = estimate.log_ratio;
  if (current.size() < 2 || baseline.size() < 2) return estimate;
  const double n_c = static_cast<double>(current.size());
  const double n_b = static_cast<double>(baseline.size());
  const double a = variance_of(current) / n_c;
  const double b = variance_of(baseline) / n_b;
  estimate.spread = std::sqrt(variance_of(current) + variance_of(baseline));
  const double standard_error = std::sqrt(a + b);
  // Welch-Satterthwaite; two identical constant sides have no spread at all: an exact interval.
  const double df = a + b > 0 ? (a + b) * (a + b) / (a * a / (n_c - 1) + b * b / (n_b - 1)) : n_c + n_b - 2;
  const double half_width = t_quantile_975(df) * standard_error;
  estimate.low = estimate.log_ratio - half_width;
  estimate.high = estimate.log_ratio + half_width;
  estimate.has_interval = true;
  return estimate;
}

int repeats_needed(const ChangeEstimate& estimate, bool paired) {
  const double change = std::abs(estimate.log_ratio);
  if (change == 0) return 0;
  if (estimate.spread == 0) return kMinRepeats;
  for (int n = kMinRepeats; n <= 10000; ++n) {
    const double df = paired ? n - 1 : 2.0 * n - 2;
    if (t_quantile_975(df) * estimate.spread / std::sqrt(static_cast<double>(n)) < change) return n;
  }
  return 10000;
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

Judgement judge_metric(const CheckMetric& metric, const MetricLimits& limits, double baseline_value,
                       double current_value, const ChangeEstimate& estimate, int current_repeats,
                       int baseline_repeats, bool paired) {
  const double change = std::expm1(estimate.log_ratio);
  if (std::abs(current_value - baseline_value) < limits.floor) {
    const bool beyond_threshold = std::abs(change) > limits.threshold;
    return {Verdict::kPass,
            beyond_threshold ? fmt::format("difference below the floor of {:g} {}", limits.floor, metric.unit) : ""};
  }
  const bool lower_is_better = metric.better == Better::kLower;
  const bool worse = lower_is_better ? change > limits.threshold : change < -limits.threshold;
  const bool better = lower_is_better ? change < -limits.threshold : change > limits.threshold;
  const int fewest = std::min(current_repeats, baseline_repeats);
  if (fewest < kMinRepeats) {
    const int needed = std::max(kMinRepeats, repeats_needed(estimate, paired));
    return {Verdict::kInconclusive, fmt::format("{} repeat(s) per side; at least {} needed", fewest, needed)};
  }
  const bool excludes_no_change = estimate.low > 0 || estimate.high < 0;
  const bool towards_worse = lower_is_better ? estimate.low > 0 : estimate.high < 0;
  if (worse) {
    if (excludes_no_change && towards_worse) return {Verdict::kRegression, ""};
    const int needed = repeats_needed(estimate, paired);
    return {Verdict::kInconclusive,
            needed > 0 ? fmt::format("the interval includes no change; about {} repeats per side would decide", needed)
                       : "the interval includes no change"};
  }
  if (better && excludes_no_change && !towards_worse) return {Verdict::kImproved, ""};
  return {Verdict::kPass, ""};
}

}  // namespace harness
