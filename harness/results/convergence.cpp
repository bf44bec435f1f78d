#include "harness/results/convergence.h"

#include <algorithm>
#include <cmath>

namespace harness {
namespace {

struct Finals {
  std::vector<double> losses;      // finite ones
  std::vector<double> accuracies;
  int64_t test_samples = 0;  // the most any run was evaluated on
  bool diverged = false;
};

Finals finals_of(const ConfigurationStats& configuration, const std::vector<const PointMetrics*>& metrics) {
  Finals finals;
  for (const int run : configuration.runs) {
    const PointMetrics* m = metrics[static_cast<std::size_t>(run)];
    if (m == nullptr) continue;
    if (std::isfinite(m->final_loss)) {
      finals.losses.push_back(m->final_loss);
    } else {
      finals.diverged = true;
    }
    if (std::isfinite(m->accuracy)) finals.accuracies.push_back(m->accuracy);
    finals.test_samples = std::max(finals.test_samples, m->test_samples);
  }
  return finals;
}

double range_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  return *high - *low;
}

}  // namespace

std::string ConvergenceCheck::verdict() const {
  if (!judged) return "";
  if (diverged) return "diverged";
  if (worse_loss && worse_accuracy) return "worse loss and accuracy";
  if (worse_loss) return "worse loss";
  if (worse_accuracy) return "worse accuracy";
  return "ok";
}

std::vector<ConvergenceCheck> check_convergence(const std::vector<ConfigurationStats>& configurations,
                                                const std::vector<const PointMetrics*>& metrics,
                                                const ConvergenceBands& bands) {
  std::vector<ConvergenceCheck> checks(configurations.size());
  for (std::size_t c = 0; c < configurations.size(); ++c) {
    const ConfigurationStats& configuration = configurations[c];
    const Finals own = finals_of(configuration, metrics);
    ConvergenceCheck& check = checks[c];
    if (own.losses.empty() && !own.diverged) continue;
    // Its own figures, judged or not (a baseline's are what the others are judged against).
    check.measured = true;
    check.final_loss = own.losses.empty() ? NAN : median_of(own.losses);
    check.accuracy = own.accuracies.empty() ? NAN : median_of(own.accuracies);
    if (configuration.baseline < 0 || static_cast<std::size_t>(configuration.baseline) == c) continue;
    const Finals base = finals_of(configurations[static_cast<std::size_t>(configuration.baseline)], metrics);
    if (base.losses.empty()) continue;
    check.judged = true;
    check.diverged = own.diverged;
    check.baseline_loss = median_of(base.losses);
    check.baseline_accuracy = base.accuracies.empty() ? NAN : median_of(base.accuracies);
    check.loss_band = bands.loss.value_or(
        std::max(range_of(base.losses), kMinLossBandFraction * std::abs(check.baseline_loss)));
    // One held-out sample more or less is no evidence: on 30 Iris test samples it is 3.3 points.
    const double one_sample = base.test_samples > 0 ? 1.0 / static_cast<double>(base.test_samples) : 0;
    check.accuracy_band =
        bands.accuracy.value_or(std::max({range_of(base.accuracies), kMinAccuracyBand, one_sample}));
    check.worse_loss = std::isfinite(check.final_loss) && check.final_loss > check.baseline_loss + check.loss_band;
    check.worse_accuracy = std::isfinite(check.accuracy) && std::isfinite(check.baseline_accuracy) &&
                           check.accuracy < check.baseline_accuracy - check.accuracy_band;
  }
  return checks;
}

}  // namespace harness
