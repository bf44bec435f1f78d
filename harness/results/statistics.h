// Statistics over repeated measurements: medians, percentiles and bootstrap intervals. Pure
// functions, deterministic for the same input (a fixed seed), so summaries and plots can be
// rebuilt from stored results to the same numbers.
#pragma once

#include <functional>
#include <vector>

namespace harness {

// A median and its 95% interval.
struct Interval {
  double median = 0;
  double low = 0;
  double high = 0;
};

// The median (mean of the middle two for an even count); 0 for no values.
double median_of(std::vector<double> values);

// The q-quantile (0..1) of sorted values, linearly interpolated; 0 for no values.
double percentile(const std::vector<double>& sorted, double q);

inline constexpr int kBootstrapResamples = 2000;

// The median of `values` and its percentile bootstrap 95% interval: the 2.5th and 97.5th
// percentiles of the median over kBootstrapResamples resamples (all three equal for one value).
Interval bootstrap_median(const std::vector<double>& values);

// f(median of a, median of b) and its bootstrap 95% interval, resampling a and b independently
// (a ratio of two configurations' medians, say). Equal bounds when both have one value.
Interval bootstrap_statistic(const std::vector<double>& a, const std::vector<double>& b,
                             const std::function<double(double, double)>& statistic);

}  // namespace harness
