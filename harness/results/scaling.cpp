#include "harness/results/scaling.h"

#include <algorithm>

#include <fmt/format.h>

#include "schemes/registry.h"

namespace harness {

int scaling_ranks(const PointSettings& settings) { return std::max(1, settings.ranks - ps_servers(settings)); }

namespace {

bool usable(const ScalingInput& point) {
  return point.ok && point.time_s > 0 && point.samples_trained > 0;
}

double time_per_sample(const ScalingInput& point) { return point.time_s / point.samples_trained; }

// Groups runs by their settings, into analysis.configurations (first-seen order) and
// analysis.configuration_of.
void group_configurations(const std::vector<ScalingInput>& runs, ScalingAnalysis& analysis) {
  analysis.configuration_of.assign(runs.size(), -1);
  std::vector<ConfigurationStats>& configurations = analysis.configurations;
  std::vector<Json> settings_of;  // per configuration
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Json settings = to_json(runs[i].settings);
    auto found = std::find(settings_of.begin(), settings_of.end(), settings);
    if (found == settings_of.end()) {
      settings_of.push_back(settings);
      configurations.push_back(ConfigurationStats{runs[i].settings, {}, 0, {}, {}, -1, {}, {}, {}});
      found = settings_of.end() - 1;
    }
    const auto configuration = static_cast<int>(found - settings_of.begin());
    configurations[configuration].runs.push_back(static_cast<int>(i));
    analysis.configuration_of[i] = configuration;
  }
}

// Per configuration: the usable runs' times per sample (returned), times and throughputs.
std::vector<std::vector<double>> summarise_runs(const std::vector<ScalingInput>& runs,
                                                std::vector<ConfigurationStats>& configurations) {
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
    configuration.time_s = bootstrap_median(times);
    configuration.throughput = bootstrap_median(throughputs);
  }
  return per_sample;
}

// What a configuration is compared on: every key but those the baseline varies.
std::vector<Json> comparison_keys(const std::vector<ConfigurationStats>& configurations, const Json& baseline,
                                  const std::vector<std::string>& moves_with_ranks) {
  const auto comparable = [&](const PointSettings& settings) {
    Json object = to_json(settings);
    object.erase("timeout_s");
    if (baseline.empty()) object.erase("ranks");
    for (const auto& [key, value] : baseline.items()) object.erase(key);
    // What moves with the ranks moves with them whether the baseline is the default or names
    // ranks ({"ranks": 1} in a weak-scaling sweep): otherwise no point of another size had a
    // baseline, and the 2-rank speedup came out empty.
    if (baseline.empty() || baseline.contains("ranks")) {
      for (const auto& key : moves_with_ranks) object.erase(key);
    }
    return object;
  };
  std::vector<Json> keys;
  for (const auto& configuration : configurations) keys.push_back(comparable(configuration.settings));
  return keys;
}

// The baseline configuration of configuration c: among the comparable ones with usable runs, the
// one with the baseline's values (the last such), or without a baseline the fewest ranks (the
// first such); -1 when there is none.
int choose_baseline(const std::vector<ConfigurationStats>& configurations, const std::vector<Json>& keys,
                    std::size_t c, const Json& baseline) {
  int chosen = -1;
  for (std::size_t b = 0; b < configurations.size(); ++b) {
    if (configurations[b].ok_runs == 0 || keys[b] != keys[c]) continue;
    if (baseline.empty()) {
      if (chosen < 0 || configurations[b].settings.ranks < configurations[chosen].settings.ranks) {
        chosen = static_cast<int>(b);
      }
    } else {
      if (has_values(configurations[b].settings, baseline)) chosen = static_cast<int>(b);
    }
  }
  return chosen;
}

// Configuration c's speedup, efficiency and Karp-Flatt metric against configuration `chosen`.
void compare_with_baseline(std::vector<ConfigurationStats>& configurations,
                           const std::vector<std::vector<double>>& per_sample, std::size_t c, int chosen) {
  ConfigurationStats& configuration = configurations[c];
  configuration.baseline = chosen;
  const double ranks_ratio = static_cast<double>(scaling_ranks(configurations[chosen].settings)) /
                             scaling_ranks(configuration.settings);
  // A configuration compared with itself has speedup 1 exactly, not a resampling spread.
  configuration.speedup =
      chosen == static_cast<int>(c)
          ? Interval{1, 1, 1}
          : bootstrap_statistic(per_sample[c], per_sample[chosen],
                                [](double self, double base) { return base / self; });
  configuration.efficiency = {configuration.speedup.median * ranks_ratio,
                              configuration.speedup.low * ranks_ratio,
                              configuration.speedup.high * ranks_ratio};
  const double p = 1.0 / ranks_ratio;
  if (p > 1) {
    configuration.karp_flatt = (1.0 / configuration.speedup.median - 1.0 / p) / (1.0 - 1.0 / p);
  }
}

// Each run against its baseline configuration's median time per sample.
void scale_runs(const std::vector<ScalingInput>& runs, const std::vector<std::vector<double>>& per_sample,
                ScalingAnalysis& analysis) {
  const std::vector<ConfigurationStats>& configurations = analysis.configurations;
  analysis.scaling.resize(runs.size());
  for (const auto& configuration : configurations) {
    if (configuration.baseline < 0) continue;
    const ConfigurationStats& base = configurations[configuration.baseline];
    const double base_time = median_of(per_sample[configuration.baseline]);
    for (const int r : configuration.runs) {
      if (!usable(runs[r])) continue;
      Scaling scaling;
      scaling.baseline = configuration.baseline;
      scaling.speedup = base_time / time_per_sample(runs[r]);
      scaling.efficiency = scaling.speedup * scaling_ranks(base.settings) / scaling_ranks(runs[r].settings);
      analysis.scaling[r] = scaling;
    }
  }
}

}  // namespace

ScalingAnalysis analyse_scaling(const std::vector<ScalingInput>& runs, const Json& baseline,
                                const std::vector<std::string>& moves_with_ranks) {
  ScalingAnalysis analysis;
  group_configurations(runs, analysis);
  std::vector<ConfigurationStats>& configurations = analysis.configurations;
  const std::vector<std::vector<double>> per_sample = summarise_runs(runs, configurations);
  const std::vector<Json> keys = comparison_keys(configurations, baseline, moves_with_ranks);
  for (std::size_t c = 0; c < configurations.size(); ++c) {
    if (configurations[c].ok_runs == 0) continue;
    const int chosen = choose_baseline(configurations, keys, c, baseline);
    if (chosen >= 0) compare_with_baseline(configurations, per_sample, c, chosen);
  }
  scale_runs(runs, per_sample, analysis);
  return analysis;
}

std::vector<std::string> settings_zipped_with_ranks(const std::vector<SweepAxis>& sweep) {
  std::vector<int> groups;
  for (const auto& axis : sweep) {
    if (axis.key == "ranks" && axis.zip_group >= 0) groups.push_back(axis.zip_group);
  }
  std::vector<std::string> keys;
  for (const auto& axis : sweep) {
    if (axis.key != "ranks" && std::find(groups.begin(), groups.end(), axis.zip_group) != groups.end()) {
      keys.push_back(axis.key);
    }
  }
  return keys;
}

namespace {

// " key=value" for each swept key, as describe_point spells a point.
std::string swept_values(const Experiment& experiment, const PointSettings& settings) {
  const Json values = to_json(settings);
  std::string text;
  for (const auto& axis : experiment.sweep) {
    if (text.find(" " + axis.key + "=") == std::string::npos) text += fmt::format(" {}={}", axis.key, values[axis.key].dump());
  }
  return text;
}

}  // namespace

std::string baseline_warning(const Experiment& experiment, const std::vector<PointSettings>& points) {
  if (points.size() < 2) return "";
  std::vector<ScalingInput> runs;
  for (const auto& settings : points) {
    if (settings.kind != Kind::kTrain) return "";
    runs.push_back({settings, true, 1.0, 1.0});
  }
  const ScalingAnalysis analysis = analyse_scaling(runs, experiment.baseline, settings_zipped_with_ranks(experiment.sweep));
  const std::vector<ConfigurationStats>& configurations = analysis.configurations;
  if (!experiment.baseline.empty()) {
    const auto missing = std::find_if(configurations.begin(), configurations.end(),
                                      [](const ConfigurationStats& c) { return c.baseline < 0; });
    if (missing == configurations.end()) return "";
    const auto count = std::count_if(configurations.begin(), configurations.end(),
                                     [](const ConfigurationStats& c) { return c.baseline < 0; });
    return fmt::format("baseline {}: {} of {} configuration(s) have no point with these values and otherwise "
                       "their settings (first:{}), so their speedup and efficiency will be empty",
                       experiment.baseline.dump(), count, configurations.size(),
                       swept_values(experiment, missing->settings));
  }
  const bool ranks_vary = std::any_of(points.begin(), points.end(),
                                      [&](const PointSettings& s) { return s.ranks != points.front().ranks; });
  if (!ranks_vary) return "";
  for (std::size_t c = 0; c < configurations.size(); ++c) {
    if (configurations[c].baseline != static_cast<int>(c)) return "";
  }
  return "every point is its own baseline: no two points differ only in ranks (and the settings zipped with "
         "them), so speedup and efficiency will read 1 everywhere; zip the settings that move with ranks "
         "together with ranks, or name a \"baseline\" (docs/experiments.md)";
}

}  // namespace harness
