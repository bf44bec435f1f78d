#include "harness/results/metrics.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "schemes/pipeline_schedule.h"

namespace harness {
namespace {

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

}  // namespace

namespace {

// Where the pipeline's step T (the stages' mean) went: the stages' mean compute C̄ (their step less
// their waits and averaging); the bubble of balanced stages at that compute: their forward and
// backward passes, P̄ of C̄, pipelined, P̄ (m + p - 1)/m, plus what each step does once (the update,
// zeroing, a delay), less C̄; what unequal stages add: the stages' schedules replayed with each
// stage's own passes, plus its work done once, less that balanced time; and the rest, transfers
// and averaging.
void add_pipeline_metrics(const PipelineFacts& pipeline, PointMetrics& metrics) {
  const auto stages = static_cast<double>(pipeline.stage.size());
  const double m = pipeline.micro_batches;
  double compute = 0;
  double passes = 0;
  double once = 0;  // the most any stage does once per step
  double step = 0;
  int64_t peak = 0;
  std::vector<double> forward;
  std::vector<double> backward;
  for (const PipelineStageFacts& stage : pipeline.stage) {
    compute += stage.compute_s / stages;
    passes += (stage.forward_s + stage.backward_s) / stages;
    once = std::max(once, std::max(0.0, stage.compute_s - stage.forward_s - stage.backward_s));
    step += stage.step_s / stages;
    peak = std::max(peak, stage.peak_activation_bytes);
    forward.push_back(stage.forward_s / m);
    backward.push_back(stage.backward_s / m);
  }
  metrics.pipeline_bubble = measured_pipeline_bubble(pipeline);
  metrics.pipeline_bubble_predicted = predicted_pipeline_bubble(pipeline);
  metrics.stage_imbalance = pipeline_stage_imbalance(pipeline);
  metrics.peak_activation_mb = static_cast<double>(peak) / 1e6;
  if (step <= 0) return;
  const double balanced = passes * (m + pipeline.stages - 1) / m + (compute - passes);
  double replayed = balanced;
  try {
    replayed = simulated_step_time(pipeline.schedule, forward, backward, pipeline.micro_batches) + once;
  } catch (const std::logic_error&) {
    // A schedule this harness does not know (a newer record's): the split leaves imbalance out.
  }
  if (replayed > 0) metrics.pipeline_bubble_replayed = std::max(0.0, 1.0 - compute / replayed);
  const double idle = std::max(0.0, 1.0 - compute / step);
  metrics.pipeline_compute_share = 1.0 - idle;
  metrics.pipeline_bubble_share = std::clamp((balanced - compute) / step, 0.0, idle);
  metrics.pipeline_imbalance_share =
      std::clamp((replayed - balanced) / step, 0.0, idle - *metrics.pipeline_bubble_share);
  metrics.pipeline_transfer_share = idle - *metrics.pipeline_bubble_share - *metrics.pipeline_imbalance_share;
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
  if (train.pipeline && !train.pipeline->stage.empty()) {
    add_pipeline_metrics(*train.pipeline, metrics);
  }
  return metrics;
}

}  // namespace harness
