#include "harness/metrics.h"

#include <fmt/format.h>

#include "harness/errors.h"

namespace harness {
namespace {

double mean_of(const Json& values, const char* field) {
  if (!values.is_array()) throw Error(fmt::format("measurements: {} is not a list", field));
  if (values.empty()) return 0;
  double sum = 0;
  for (const auto& value : values) sum += value.get<double>();
  return sum / static_cast<double>(values.size());
}

// Settings that must match for two points to be on one scaling curve: all but ranks, and but
// the timeout (a limit, not part of the computation).
Json comparable_settings(const PointSettings& settings) {
  Json object = to_json(settings);
  object.erase("ranks");
  object.erase("timeout_s");
  return object;
}

bool usable(const ScalingInput& point) {
  return point.ok && point.time_s > 0 && point.samples_trained > 0;
}

double time_per_sample(const ScalingInput& point) { return point.time_s / point.samples_trained; }

}  // namespace

PointMetrics point_metrics(const Json& measurements) {
  try {
    PointMetrics metrics;
    const Json& steps = measurements.at("steps");
    metrics.time_s = measurements.at("train_time_s").get<double>();
    metrics.samples_trained = measurements.at("samples_trained").get<double>();
    metrics.throughput_samples_per_s =
        metrics.time_s > 0 ? metrics.samples_trained / metrics.time_s : 0;
    metrics.step_time_s = mean_of(steps.at("step_s"), "steps.step_s");
    metrics.compute_time_s = mean_of(steps.at("compute_s"), "steps.compute_s");
    metrics.comm_time_s = mean_of(steps.at("comm_s"), "steps.comm_s");
    metrics.exposed_comm_time_s = mean_of(steps.at("exposed_comm_s"), "steps.exposed_comm_s");
    metrics.comm_fraction =
        metrics.step_time_s > 0 ? metrics.exposed_comm_time_s / metrics.step_time_s : 0;
    metrics.overlap =
        metrics.comm_time_s > 0 ? 1.0 - metrics.exposed_comm_time_s / metrics.comm_time_s : 0;
    const Json& epochs = measurements.at("epochs");
    if (!epochs.empty()) {
      metrics.final_loss = epochs.back().at("train_loss").get<double>();
      metrics.accuracy = epochs.back().at("test_accuracy").get<double>();
    }
    return metrics;
  } catch (const Json::exception& error) {
    throw Error(fmt::format("measurements: {}", error.what()));
  }
}

Json to_json(const MessageSizeMetrics& size) {
  return {{"bytes", size.bytes},
          {"time_us_median", size.time_us_median},
          {"time_us_min", size.time_us_min},
          {"time_us_max", size.time_us_max},
          {"algbw_gbps", size.algbw_gbps},
          {"busbw_gbps", size.busbw_gbps},
          {"wrong", size.wrong}};
}

std::vector<MessageSizeMetrics> message_size_metrics(const Json& measurements) {
  try {
    std::vector<MessageSizeMetrics> sizes;
    for (const auto& entry : measurements.at("sizes")) {
      MessageSizeMetrics size;
      size.bytes = entry.at("bytes").get<int64_t>();
      size.time_us_median = entry.at("time_us_median").get<double>();
      size.time_us_min = entry.at("time_us_min").get<double>();
      size.time_us_max = entry.at("time_us_max").get<double>();
      size.algbw_gbps = entry.at("algbw_gbps").get<double>();
      size.busbw_gbps = entry.at("busbw_gbps").get<double>();
      size.wrong = entry.at("wrong").get<int64_t>();
      sizes.push_back(size);
    }
    if (sizes.empty()) throw Error("measurements: no message sizes");
    return sizes;
  } catch (const Json::exception& error) {
    throw Error(fmt::format("measurements: {}", error.what()));
  }
}

std::vector<std::optional<Scaling>> scaling_metrics(const std::vector<ScalingInput>& points) {
  std::vector<std::optional<Scaling>> result(points.size());
  std::vector<Json> keys;
  keys.reserve(points.size());
  for (const auto& point : points) keys.push_back(comparable_settings(point.settings));

  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!usable(points[i])) continue;
    int baseline = -1;
    for (std::size_t j = 0; j < points.size(); ++j) {
      if (!usable(points[j]) || keys[j] != keys[i]) continue;
      if (baseline < 0 || points[j].settings.ranks < points[baseline].settings.ranks) {
        baseline = static_cast<int>(j);
      }
    }
    const ScalingInput& base = points[baseline];
    Scaling scaling;
    scaling.baseline = baseline;
    scaling.speedup = time_per_sample(base) / time_per_sample(points[i]);
    scaling.efficiency = scaling.speedup * base.settings.ranks / points[i].settings.ranks;
    result[i] = scaling;
  }
  return result;
}

}  // namespace harness
