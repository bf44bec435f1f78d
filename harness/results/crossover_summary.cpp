#include "harness/results/crossover_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/registry.h"
#include "harness/results/plot_data.h"
#include "harness/results/statistics.h"

namespace harness {
namespace {

// The settings that backends own (hier_allreduce_below_bytes, ...), by backend: set for one
// backend, they mean nothing to another, so they neither tell configurations apart for a
// comparison nor label another backend's.
std::map<std::string, std::set<std::string>> backend_owned_keys() {
  std::map<std::string, std::set<std::string>> keys;
  for (const BackendInfo& backend : backend_table()) {
    if (backend.settings == nullptr) continue;
    for (const BackendSetting& setting : backend.settings()) {
      keys[std::string(setting.key)].insert(std::string(backend.name));
    }
  }
  return keys;
}

// One configuration (its settings; repeats merged): each size's times over its repeats.
struct Configuration {
  PointSettings settings;
  std::map<int64_t, std::vector<double>> times_us;
};

std::string speedups(double low, double high) {
  const std::string first = fmt::format("{:.2f}", low);
  const std::string last = fmt::format("{:.2f}", high);
  return first == last ? fmt::format("{}x", first) : fmt::format("{}-{}x", first, last);
}

// Per message size both have, `reference`'s median time over its repeats divided by
// `configuration`'s, in size order.
std::vector<std::pair<int64_t, double>> speedups_against(const Configuration& configuration,
                                                         const Configuration& reference) {
  std::vector<std::pair<int64_t, double>> speedup;
  for (const auto& [bytes, times] : configuration.times_us) {
    const auto found = reference.times_us.find(bytes);
    if (found == reference.times_us.end()) continue;
    const double mine = median_of(times);
    const double theirs = median_of(found->second);
    if (mine > 0 && theirs > 0) speedup.emplace_back(bytes, theirs / mine);
  }
  return speedup;
}

// "faster from 16384 B up (1.20-2.00x), 1.00x below", "faster at every size (...)" or "not
// faster at the largest size, 65536 B (0.50x)". `speedup` is not empty.
std::string crossover_verdict(const std::vector<std::pair<int64_t, double>>& speedup) {
  // The first size from which it is faster at every larger size.
  std::size_t from = speedup.size();
  while (from > 0 && speedup[from - 1].second > 1) --from;
  const auto range = [&speedup](std::size_t begin, std::size_t end) {
    double low = speedup[begin].second;
    double high = low;
    for (std::size_t i = begin; i < end; ++i) {
      low = std::min(low, speedup[i].second);
      high = std::max(high, speedup[i].second);
    }
    return speedups(low, high);
  };
  if (from == 0) return fmt::format("faster at every size ({})", range(0, speedup.size()));
  if (from == speedup.size()) {
    return fmt::format("not faster at the largest size, {} B ({})", speedup.back().first,
                       range(speedup.size() - 1, speedup.size()));
  }
  return fmt::format("faster from {} B up ({}), {} below", speedup[from].first, range(from, speedup.size()),
                     range(0, from));
}


// The comm records of a run, one Configuration per distinct settings (as JSON), in point order.
struct Configurations {
  std::map<std::string, Configuration> by_settings;
  std::vector<std::string> in_point_order;
  std::vector<PointSettings> all_settings;  // of every completed point, repeats included
};

Configurations configurations_of(const ResultSet& set) {
  Configurations configurations;
  for (const auto& run : set.runs()) {
    if (!run.record.ok()) continue;
    const std::string settings = to_json(run.record.settings).dump();
    if (configurations.by_settings.count(settings) == 0) configurations.in_point_order.push_back(settings);
    Configuration& configuration = configurations.by_settings[settings];
    configuration.settings = run.record.settings;
    for (const auto& size : run.record.measurements->comm->sizes) {
      configuration.times_us[size.bytes].push_back(size.time_us_median);
    }
    configurations.all_settings.push_back(run.record.settings);
  }
  return configurations;
}

// "backend=hier hier_allreduce_below_bytes=0", "backend=ring": the settings that vary across the
// run, less those other backends own.
class Labels {
 public:
  Labels(const Configurations& configurations, std::map<std::string, std::set<std::string>> owners)
      : owners_(std::move(owners)), varying_(varying_keys(configurations.all_settings)) {
    ranks_vary_ = std::find(varying_.begin(), varying_.end(), "ranks") != varying_.end();
  }

  std::string operator()(const PointSettings& settings) const {
    std::vector<std::string> keys;
    for (const auto& key : varying_) {
      const auto owned = owners_.find(key);
      if (owned == owners_.end() || owned->second.count(settings.backend) != 0) keys.push_back(key);
    }
    return curve_label(settings, keys, ranks_vary_);
  }

 private:
  std::map<std::string, std::set<std::string>> owners_;
  std::vector<std::string> varying_;
  bool ranks_vary_ = false;
};

std::string against_allreduce(const Configurations& configurations,
                              const std::map<std::string, std::set<std::string>>& owners, const Labels& label) {
  const auto comparison_key = [&owners](const PointSettings& settings) {
    Json key = to_json(settings);
    key.erase("backend");
    for (const auto& [name, backends] : owners) key.erase(name);
    return key.dump();
  };
  std::map<std::string, const Configuration*> allreduce;  // by comparison key
  for (const auto& [settings, configuration] : configurations.by_settings) {
    if (configuration.settings.backend == "allreduce") allreduce[comparison_key(configuration.settings)] = &configuration;
  }
  std::string lines;
  for (const auto& settings : configurations.in_point_order) {
    const Configuration& configuration = configurations.by_settings.at(settings);
    if (configuration.settings.backend == "allreduce") continue;
    const auto found = allreduce.find(comparison_key(configuration.settings));
    if (found == allreduce.end()) continue;
    const auto speedup = speedups_against(configuration, *found->second);
    if (speedup.empty()) continue;
    lines += fmt::format("  {}: {}\n", label(configuration.settings), crossover_verdict(speedup));
  }
  if (lines.empty()) return "";
  return fmt::format("Against allreduce (its median time over repeats / this one's, per size):\n{}", lines);
}

// `backend`'s configurations that differ only in its own crossover setting `key`, each against
// the one with the largest value (the algorithm below the crossover at the most sizes), so that
// the line says from which size the other algorithm wins.
std::string against_own_crossover(const Configurations& configurations, std::string_view backend,
                                  const std::string& key, const Labels& label) {
  std::map<std::string, std::vector<const Configuration*>> groups;  // by the settings but `key`
  std::vector<std::string> group_order;
  for (const auto& settings : configurations.in_point_order) {
    const Configuration& configuration = configurations.by_settings.at(settings);
    if (configuration.settings.backend != backend) continue;
    Json rest = to_json(configuration.settings);
    rest.erase(key);
    auto& group = groups[rest.dump()];
    if (group.empty()) group_order.push_back(rest.dump());
    group.push_back(&configuration);
  }
  std::string summary;
  for (const auto& name : group_order) {
    const auto& group = groups.at(name);
    if (group.size() < 2) continue;
    const Configuration* reference = group.front();
    for (const Configuration* configuration : group) {
      if (to_json(reference->settings)[key] < to_json(configuration->settings)[key]) reference = configuration;
    }
    std::string within;
    for (const Configuration* configuration : group) {
      if (configuration == reference) continue;
      const auto speedup = speedups_against(*configuration, *reference);
      if (speedup.empty()) continue;
      within += fmt::format("  {}: {}\n", label(configuration->settings), crossover_verdict(speedup));
    }
    if (within.empty()) continue;
    summary += fmt::format("Against {} (its median time over repeats / this one's, per size):\n{}",
                           label(reference->settings), within);
  }
  return summary;
}

}  // namespace

std::string crossover_summary(const ResultSet& set) {
  const Configurations configurations = configurations_of(set);
  const std::map<std::string, std::set<std::string>> owners = backend_owned_keys();
  const Labels label(configurations, owners);
  std::string summary = against_allreduce(configurations, owners, label);
  for (const BackendInfo& backend : backend_table()) {
    if (backend.settings == nullptr) continue;
    for (const BackendSetting& setting : backend.settings()) {
      if (setting.own_crossover) {
        summary += against_own_crossover(configurations, backend.name, std::string(setting.key), label);
      }
    }
  }
  return summary;
}

}  // namespace harness
