#include "harness/results/statistics.h"

#include <algorithm>
#include <random>

namespace harness {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Interval bootstrap_statistic(const std::vector<double>& a, const std::vector<double>& b,
                             const std::function<double(double, double)>& statistic) {
  Interval interval;
  interval.median = statistic(median_of(a), median_of(b));
  if (a.size() <= 1 && b.size() <= 1) {
    interval.low = interval.high = interval.median;
    return interval;
  }
  // Seeded by the sizes only: the same runs give the same interval, run after run.
  std::mt19937_64 engine(0x5EEDB007ULL + a.size() * 1315423911ULL + b.size());
  std::vector<double> estimates;
  estimates.reserve(kBootstrapResamples);
  std::vector<double> sample_a(a.size());
  std::vector<double> sample_b(b.size());
  for (int r = 0; r < kBootstrapResamples; ++r) {
    for (auto& value : sample_a) value = a[engine() % a.size()];
    for (auto& value : sample_b) value = b[engine() % b.size()];
    estimates.push_back(statistic(median_of(sample_a), median_of(sample_b)));
  }
  std::sort(estimates.begin(), estimates.end());
  interval.low = percentile(estimates, 0.025);
  interval.high = percentile(estimates, 0.975);
  return interval;
}

Interval bootstrap_median(const std::vector<double>& values) {
  return bootstrap_statistic(values, {}, [](double median, double) { return median; });
}

}  // namespace harness
