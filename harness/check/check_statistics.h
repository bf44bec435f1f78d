// The statistics of `harness check`: a 95% t-interval of the mean log ratio between two sides'
// repeats (paired when both sides ran interleaved in one run, Welch's otherwise), and the verdict
// a metric gets from it. Pure functions, so that every verdict can be recomputed from stored
// results.
#pragma once

#include <string>
#include <vector>

#include "harness/check/check_metrics.h"

namespace harness {

// The change from baseline to current: the difference of the sides' means (of log values, a log
// ratio; of raw values, a difference in the metric's unit), with its 95% interval.
struct ChangeEstimate {
  double log_ratio = 0;           // the difference (named for the usual, log, scale)
  double low = 0;                 // interval bounds of it
  double high = 0;
  bool has_interval = false;      // false with fewer than two values (on a side, or pairs)
  bool paired = false;
  double spread = 0;              // pairs: sd of the differences
  double current_spread = 0;      // Welch: each side's sd
  double baseline_spread = 0;
  int current_count = 0;
  int baseline_count = 0;
  // The range every repeat's change lies in: the least and the most difference of the pairs, or,
  // unpaired, of every current value against every baseline value (min current - max baseline,
  // max current - min baseline).
  double least_difference = 0;
  double most_difference = 0;
};

// Both sides are log values per repeat, `current[i]` and `baseline[i]` from the same round
// (equal lengths).
ChangeEstimate paired_change(const std::vector<double>& current, const std::vector<double>& baseline);
// Both sides are log values per repeat, from runs that did not interleave.
ChangeEstimate welch_change(const std::vector<double>& current, const std::vector<double>& baseline);

// The 0.975 quantile of Student's t with `degrees_of_freedom` (> 0, fractional for Welch).
double t_quantile_975(double degrees_of_freedom);

inline constexpr int kMinRepeats = 3;

// Repeats per side that would make the interval of `estimate` exclude no change if the observed
// change and spreads held: at least kMinRepeats and more than a side has now; 0 when the change is
// zero (no number would), kMaxRepeatsNeeded when even that many would not.
inline constexpr int kMaxRepeatsNeeded = 1000;
int repeats_needed(const ChangeEstimate& estimate);

enum class Verdict { kRegression, kInconclusive, kMissing, kNotComparable, kFailed, kImproved, kPass };

// "REGRESSION", "INCONCLUSIVE", "MISSING", "NOT COMPARABLE", "FAILED", "IMPROVED", "PASS".
std::string verdict_name(Verdict verdict);

struct MetricLimits {
  double threshold = 0;  // relative
  double floor = 0;      // absolute, in the metric's unit
};

struct Judgement {
  Verdict verdict = Verdict::kPass;
  std::string note;  // why, when it is not a plain pass or regression
};

// The verdict of one metric: the floor first (an absolute difference below it passes), then too
// few repeats (inconclusive, saying how many), then the change against the threshold in the
// metric's bad direction and whether the interval excludes no change, or every repeat is beyond
// the threshold that way (one far outlier in the bad direction widens the interval past no
// change; it does not make the change any less). `log_scale`: the estimate
// is of log values (a ratio); otherwise of raw values (a difference, relative to baseline_value).
Judgement judge_metric(const CheckMetric& metric, const MetricLimits& limits, double baseline_value,
                       double current_value, const ChangeEstimate& estimate, bool log_scale = true);

// A plain decimal with up to six places and no trailing zeros ("0.5", "0.000012"), never an
// exponent; "n/a" for NaN or infinity. What every output prints numbers of limits with.
std::string format_number(double value);

// The relative change an estimate means: expm1 of a log difference, or a difference over the
// baseline (infinite, with the difference's sign, when the baseline is 0).
double relative_change(double difference, double baseline_value, bool log_scale);

}  // namespace harness
