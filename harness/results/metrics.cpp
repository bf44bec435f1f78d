#include "harness/results/metrics.h"

#include <algorithm>
#include <numeric>

namespace harness {
namespace {

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace

PointMetrics point_metrics(const TrainMeasurements& train) {
  PointMetrics metrics;
  metrics.time_s = train.train_time_s;
  metrics.samples_trained = train.samples_trained;
  if (train.sgd) metrics.samples_per_step = static_cast<double>(train.sgd->global_batch);
  metrics.throughput_samples_per_s = metrics.time_s > 0 ? metrics.samples_trained / metrics.time_s : 0;
  const StepSeries& steps = train.steps;
  metrics.step_time_s = mean_of(steps.step_s);
  metrics.compute_time_s = mean_of(steps.compute_s);
  metrics.comm_time_s = mean_of(steps.comm_s);
  metrics.exposed_comm_time_s = mean_of(steps.exposed_comm_s);
  if (steps.wait_s) metrics.wait_time_s = mean_of(*steps.wait_s);
  if (steps.imbalance_s) metrics.imbalance_time_s = mean_of(*steps.imbalance_s);
  metrics.comm_fraction =
      metrics.step_time_s > 0 ? metrics.exposed_comm_time_s / metrics.step_time_s : 0;
  metrics.overlap =
      metrics.comm_time_s > 0 ? 1.0 - metrics.exposed_comm_time_s / metrics.comm_time_s : 0;
  if (!train.epochs.empty()) {
    metrics.final_loss = train.epochs.back().train_loss;
    metrics.accuracy = train.epochs.back().test_accuracy;
    metrics.test_samples = train.test_samples;
  }
  if (train.time_to_target) {
    metrics.target_reached = train.time_to_target->reached;
    if (train.time_to_target->reached) metrics.time_to_target_s = train.time_to_target->time_s;
  }
  if (train.async_ps) {
    const std::vector<int64_t>& counts = train.async_ps->staleness_counts;
    metrics.staleness_median = static_cast<double>(staleness_quantile(counts, 0.5));
    metrics.staleness_p95 = static_cast<double>(staleness_quantile(counts, 0.95));
    metrics.staleness_max = static_cast<double>(staleness_quantile(counts, 1.0));
    const auto& busy = train.async_ps->server_busy_fraction;
    if (!busy.empty()) metrics.server_busy_fraction = *std::max_element(busy.begin(), busy.end());
  }
  return metrics;
}

}  // namespace harness
