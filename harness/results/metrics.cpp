#include "harness/results/metrics.h"

#include <algorithm>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "harness/common/errors.h"

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
bool usable(const ScalingInput& point) {
  return point.ok && point.time_s > 0 && point.samples_trained > 0;
}

double time_per_sample(const ScalingInput& point) { return point.time_s / point.samples_trained; }

}  // namespace

double epoch_value(const Json& epoch, const char* field) {
  const Json& value = epoch.at(field);
  return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}

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
    if (steps.contains("wait_s")) {
      metrics.wait_time_s = mean_of(steps.at("wait_s"), "steps.wait_s");
    }
    if (steps.contains("imbalance_s")) {
      metrics.imbalance_time_s = mean_of(steps.at("imbalance_s"), "steps.imbalance_s");
    }
    metrics.comm_fraction =
        metrics.step_time_s > 0 ? metrics.exposed_comm_time_s / metrics.step_time_s : 0;
    metrics.overlap =
        metrics.comm_time_s > 0 ? 1.0 - metrics.exposed_comm_time_s / metrics.comm_time_s : 0;
    const Json& epochs = measurements.at("epochs");
    if (!epochs.empty()) {
      metrics.final_loss = epoch_value(epochs.back(), "train_loss");
      metrics.accuracy = epoch_value(epochs.back(), "test_accuracy");
    }
    return metrics;
  } catch (const Json::exception& error) {
    throw Error(fmt::format("measurements: {}", error.what()));
  }
}

std::vector<double> load_imbalance_per_step(const std::vector<double>& compute_s,
                                            std::size_t steps, const std::vector<bool>& training) {
  if (compute_s.size() != steps * training.size()) {
    throw Error(fmt::format("load imbalance: {} compute times for {} steps of {} ranks",
                            compute_s.size(), steps, training.size()));
  }
  const auto ranks = static_cast<std::size_t>(std::count(training.begin(), training.end(), true));
  std::vector<double> imbalance(steps, 0.0);
  if (ranks < 2) return imbalance;
  for (std::size_t step = 0; step < steps; ++step) {
    double slowest = 0;
    double sum = 0;
    for (std::size_t r = 0; r < training.size(); ++r) {
      if (!training[r]) continue;
      const double compute = compute_s[r * steps + step];
      slowest = std::max(slowest, compute);
      sum += compute;
    }
    imbalance[step] = slowest - sum / static_cast<double>(ranks);
  }
  return imbalance;
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

namespace {

// The percentile (0..1) of sorted values, linearly interpolated.
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

constexpr int kBootstrapResamples = 2000;

// Bootstrap interval of f(median of resampled a, median of resampled b); b may be empty.
// Deterministic: the same runs give the same interval.
template <typename Statistic>
Interval bootstrap(const std::vector<double>& a, const std::vector<double>& b, Statistic statistic) {
  Interval interval;
  interval.median = statistic(median_of(a), median_of(b));
  if (a.size() <= 1 && b.size() <= 1) {
    interval.low = interval.high = interval.median;
    return interval;
  }
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

}  // namespace

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<ConfigurationStats> configuration_stats(const std::vector<ScalingInput>& runs,
                                                    const Json& baseline) {
  // Group runs by their settings.
  std::vector<ConfigurationStats> configurations;
  std::vector<Json> settings_of;  // per configuration
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Json settings = to_json(runs[i].settings);
    auto found = std::find(settings_of.begin(), settings_of.end(), settings);
    if (found == settings_of.end()) {
      settings_of.push_back(settings);
      configurations.push_back(ConfigurationStats{runs[i].settings, {}, 0, {}, {}, -1, {}, {}, {}});
      found = settings_of.end() - 1;
    }
    configurations[found - settings_of.begin()].runs.push_back(static_cast<int>(i));
  }

  // Per configuration: the usable runs' times per sample, times and throughputs.
  std::vector<std::vector<double>> per_sample(configurations.size());
  for (std::size_t c = 0; c < configurations.size(); ++c) {
    ConfigurationStats& configuration = configurations[c];
    std::vector<double> times;
    std::vector<double> throughputs;
    for (const int r : configuration.runs) {
      if (!usable(runs[r])) continue;
      per_sample[c].push_back(time_per_sample(runs[r]));
      times.push_back(runs[r].time_s);
      throughputs.push_back(runs[r].samples_trained / runs[r].time_s);
    }
    configuration.ok_runs = static_cast<int>(times.size());
    const auto identity = [](double x, double) { return x; };
    configuration.time_s = bootstrap(times, {}, identity);
    configuration.throughput = bootstrap(throughputs, {}, identity);
  }

  // What a configuration is compared on: every key but those the baseline varies.
  const auto comparable = [&baseline](const PointSettings& settings) {
    Json object = to_json(settings);
    object.erase("timeout_s");
    if (baseline.empty()) {
      object.erase("ranks");
    } else {
      for (const auto& [key, value] : baseline.items()) object.erase(key);
    }
    return object;
  };
  std::vector<Json> keys;
  for (const auto& configuration : configurations) keys.push_back(comparable(configuration.settings));

  for (std::size_t c = 0; c < configurations.size(); ++c) {
    ConfigurationStats& configuration = configurations[c];
    if (configuration.ok_runs == 0) continue;
    int chosen = -1;
    for (std::size_t b = 0; b < configurations.size(); ++b) {
      if (configurations[b].ok_runs == 0 || keys[b] != keys[c]) continue;
      if (baseline.empty()) {
        if (chosen < 0 || configurations[b].settings.ranks < configurations[chosen].settings.ranks) {
          chosen = static_cast<int>(b);
        }
      } else {
        const Json values = to_json(configurations[b].settings);
        bool matches = true;
        for (const auto& [key, value] : baseline.items()) matches = matches && values[key] == value;
        if (matches) chosen = static_cast<int>(b);
      }
    }
    if (chosen < 0) continue;
    configuration.baseline = chosen;
    const double ranks_ratio = static_cast<double>(configurations[chosen].settings.ranks) /
                               configuration.settings.ranks;
    // A configuration compared with itself has speedup 1 exactly, not a resampling spread.
    configuration.speedup =
        chosen == static_cast<int>(c)
            ? Interval{1, 1, 1}
            : bootstrap(per_sample[c], per_sample[chosen],
                        [](double self, double base) { return base / self; });
    configuration.efficiency = {configuration.speedup.median * ranks_ratio,
                                configuration.speedup.low * ranks_ratio,
                                configuration.speedup.high * ranks_ratio};
    const double p = 1.0 / ranks_ratio;
    if (p > 1) {
      configuration.karp_flatt = (1.0 / configuration.speedup.median - 1.0 / p) / (1.0 - 1.0 / p);
    }
  }
  return configurations;
}

std::vector<std::optional<Scaling>> scaling_metrics(const std::vector<ScalingInput>& runs,
                                                    const Json& baseline) {
  std::vector<std::optional<Scaling>> result(runs.size());
  const auto configurations = configuration_stats(runs, baseline);
  for (const auto& configuration : configurations) {
    if (configuration.baseline < 0) continue;
    const ConfigurationStats& base = configurations[configuration.baseline];
    std::vector<double> base_per_sample;
    for (const int r : base.runs) {
      if (usable(runs[r])) base_per_sample.push_back(time_per_sample(runs[r]));
    }
    const double base_time = median_of(base_per_sample);
    for (const int r : configuration.runs) {
      if (!usable(runs[r])) continue;
      Scaling scaling;
      scaling.baseline = configuration.baseline;
      scaling.speedup = base_time / time_per_sample(runs[r]);
      scaling.efficiency = scaling.speedup * base.settings.ranks / runs[r].settings.ranks;
      result[r] = scaling;
    }
  }
  return result;
}

}  // namespace harness
