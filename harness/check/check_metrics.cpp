#include "harness/check/check_metrics.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/results/statistics.h"

namespace harness {
namespace {

// The median over the timed steps of `series`, in milliseconds.
double median_ms(const std::vector<double>& series) { return median_of(series) * 1000; }

// The median over the timed steps of the share of the step that waited for communication.
double median_comm_fraction(const StepSeries& steps) {
  std::vector<double> fractions;
  fractions.reserve(steps.step_s.size());
  for (std::size_t i = 0; i < steps.step_s.size() && i < steps.exposed_comm_s.size(); ++i) {
    if (steps.step_s[i] > 0) fractions.push_back(steps.exposed_comm_s[i] / steps.step_s[i]);
  }
  return median_of(fractions) * 100;
}

// Samples per second of all ranks at the median step: the global batch over the median step time
// (K-means, without a batch: samples over training time).
double median_throughput(const TrainMeasurements& train) {
  const double step_s = median_of(train.steps.step_s);
  if (train.sgd && step_s > 0) return static_cast<double>(train.sgd->global_batch) / step_s;
  return train.train_time_s > 0 ? train.samples_trained / train.train_time_s : 0;
}

}  // namespace

const std::vector<CheckMetric>& check_metric_table() {
  // Thresholds: what a user of a scaling study would call a real change; the confidence interval
  // keeps noise within a run out, the threshold the drift between runs (two runs of
  // experiments/ci-comm.json minutes apart differed by up to 13% with intervals excluding no
  // change: docs/ci-gate.md). Floors: below what these machines resolve.
  static const std::vector<CheckMetric> table = {
      {"comm_time", Kind::kTrain, "ms", Better::kLower, 0.10, 0.02,
       "gradient communication per step (the training ranks' mean time in the backend)"},
      {"exposed_comm", Kind::kTrain, "ms", Better::kLower, 0.10, 0.02,
       "communication the step waited for after backward (not hidden by overlap)"},
      {"comm_fraction", Kind::kTrain, "%", Better::kLower, 0.10, 1.0,
       "exposed communication as a share of the step (floor in percentage points)"},
      {"step_time", Kind::kTrain, "ms", Better::kLower, 0.10, 0.05, "time per training step"},
      {"throughput", Kind::kTrain, "samples/s", Better::kHigher, 0.10, 1.0, "samples per second, all ranks"},
      {"time_to_target", Kind::kTrain, "s", Better::kLower, 0.10, 0.01,
       "training time until the point's target was first reached (evaluation excluded; a run that did not "
       "reach it has no value)"},
      {"busbw", Kind::kComm, "GB/s", Better::kHigher, 0.15, 0.001,
       "bus bandwidth per message size (algbw x 2(p-1)/p)"},
      {"reduce_time", Kind::kComm, "us", Better::kLower, 0.15, 0.5,
       "median time of one allreduce per message size"},
  };
  return table;
}

const CheckMetric& find_check_metric(std::string_view name, const std::string& where) {
  const auto& table = check_metric_table();
  const auto found = std::find_if(table.begin(), table.end(), [&](const CheckMetric& m) { return m.name == name; });
  if (found != table.end()) return *found;
  std::vector<std::string_view> names;
  for (const auto& metric : table) names.push_back(metric.name);
  const std::string suggestion = closest_name(std::string(name), names);
  throw ConfigError(fmt::format("{}: unknown metric {} ({}expected one of: {})", where, describe_text(std::string(name)),
                                suggestion.empty() ? "" : fmt::format("did you mean \"{}\"? ", suggestion),
                                fmt::join(names, ", ")));
}

std::vector<MetricValue> metric_values(const CheckMetric& metric, const Measurements& measurements) {
  std::vector<MetricValue> values;
  if (metric.kind == Kind::kComm && measurements.comm) {
    for (const auto& size : measurements.comm->sizes) {
      const double value = metric.name == "busbw" ? size.busbw_gbps : size.time_us_median;
      values.push_back({size.bytes, size_label(size.bytes), value});
    }
    return values;
  }
  if (metric.kind != Kind::kTrain || !measurements.train) return values;
  const TrainMeasurements& train = *measurements.train;
  double value = 0;
  // One rank exchanges nothing: its few tenths of a microsecond in the backend's call are no
  // communication, and a metric 0 on both sides is no row.
  const bool exchanges = measurements.world_size != 1;  // 0: a record that does not say
  if (metric.name == "comm_time" && exchanges) value = median_ms(train.steps.comm_s);
  if (metric.name == "exposed_comm" && exchanges) value = median_ms(train.steps.exposed_comm_s);
  if (metric.name == "comm_fraction" && exchanges) value = median_comm_fraction(train.steps);
  if (metric.name == "step_time") value = median_ms(train.steps.step_s);
  if (metric.name == "throughput") value = median_throughput(train);
  if (metric.name == "time_to_target") {
    if (!train.time_to_target || !train.time_to_target->reached) return values;
    value = train.time_to_target->time_s;
  }
  values.push_back({0, "", value});
  return values;
}

std::string size_label(int64_t bytes) {
  constexpr int64_t kKiB = 1024;
  if (bytes >= kKiB * kKiB && bytes % (kKiB * kKiB) == 0) return fmt::format("{} MiB", bytes / (kKiB * kKiB));
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} B", bytes);
}

}  // namespace harness
