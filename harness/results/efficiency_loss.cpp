#include "harness/results/efficiency_loss.h"

#include <algorithm>

#include "harness/results/statistics.h"

namespace harness {
namespace {

// A configuration's step in parts: medians over its successful runs of the per-run means.
struct StepParts {
  double step = 0;
  double compute = 0;
  double exchange = 0;
  double waiting = 0;
  double samples_per_step = 0;
  bool measured = false;
};

StepParts parts_of(const ConfigurationStats& configuration, const std::vector<const PointMetrics*>& metrics) {
  std::vector<double> step, compute, exchange, waiting, samples;
  for (const int run : configuration.runs) {
    const PointMetrics* m = metrics[static_cast<std::size_t>(run)];
    if (m == nullptr || m->samples_per_step <= 0 || m->step_time_s <= 0) continue;
    // As the breakdown plot: the exposed time is waiting for the slowest rank plus the exchange.
    const double wait = std::min(m->wait_time_s.value_or(0), m->exposed_comm_time_s);
    step.push_back(m->step_time_s);
    compute.push_back(m->compute_time_s);
    exchange.push_back(m->exposed_comm_time_s - wait);
    waiting.push_back(wait);
    samples.push_back(m->samples_per_step);
  }
  if (step.empty()) return {};
  return {median_of(step), median_of(compute), median_of(exchange), median_of(waiting), median_of(samples), true};
}

}  // namespace

std::vector<EfficiencyLoss> efficiency_losses(const std::vector<ConfigurationStats>& configurations,
                                              const std::vector<const PointMetrics*>& metrics) {
  std::vector<EfficiencyLoss> losses(configurations.size());
  for (std::size_t c = 0; c < configurations.size(); ++c) {
    const ConfigurationStats& configuration = configurations[c];
    if (configuration.baseline < 0 || static_cast<std::size_t>(configuration.baseline) == c) continue;
    if (configuration.ok_runs == 0) continue;
    const ConfigurationStats& baseline = configurations[static_cast<std::size_t>(configuration.baseline)];
    const StepParts own = parts_of(configuration, metrics);
    const StepParts base = parts_of(baseline, metrics);
    if (!own.measured || !base.measured) continue;
    const double r = (own.samples_per_step / base.samples_per_step) *
                     (static_cast<double>(scaling_ranks(baseline.settings)) / scaling_ranks(configuration.settings));
    EfficiencyLoss& loss = losses[c];
    loss.judged = true;
    loss.lost = 1 - configuration.efficiency.median;
    loss.compute = (own.compute - r * base.compute) / own.step;
    loss.communication = (own.exchange - r * base.exchange) / own.step;
    loss.waiting = (own.waiting - r * base.waiting) / own.step;
    loss.rest = loss.lost - loss.compute - loss.communication - loss.waiting;
  }
  return losses;
}

}  // namespace harness
