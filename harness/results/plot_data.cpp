#include "harness/results/plot_data.h"

#include <algorithm>

#include <fmt/format.h>

#include "schemes/registry.h"

namespace harness {

std::vector<std::string> varying_keys(const std::vector<PointSettings>& settings) {
  std::vector<std::string> keys;
  if (settings.empty()) return keys;
  std::vector<Json> values;
  for (const auto& each : settings) values.push_back(to_json(each));
  for (const auto& [key, value] : values.front().items()) {
    if (key == "timeout_s") continue;
    for (const auto& other : values) {
      if (other[key] != value) {
        keys.push_back(key);
        break;
      }
    }
  }
  return keys;
}

std::string curve_label(const PointSettings& settings, const std::vector<std::string>& keys,
                        bool include_ranks) {
  const Json values = to_json(settings);
  std::string label;
  bool scheme_named = false;
  for (const auto& key : keys) {
    if (key == "ranks" && !include_ranks) continue;
    // A scheme and its own settings in one word ("async_ps s=2"): the others' are not read. A curve
    // along the micro-batches leaves them out of its pipeline's name.
    if (key == "scheme" || key == "sync_every" || key == "max_staleness" || key == "pipeline_stages" ||
        key == "micro_batches" || key == "pipeline_schedule" || key == "stage_boundaries") {
      if (!scheme_named) {
        if (!label.empty()) label += ' ';
        const bool along_micro_batches = std::find(keys.begin(), keys.end(), "micro_batches") == keys.end();
        label += settings.scheme == "pipeline" && along_micro_batches
                     ? fmt::format("pipeline {} {}x{}", pipeline_schedule(settings), pipeline_stages(settings),
                                   pipeline_replicas(settings))
                     : scheme_label(settings);
      }
      scheme_named = true;
      continue;
    }
    const Json& value = values[key];
    label += fmt::format("{}{}={}", label.empty() ? "" : " ", key,
                         value.is_string() ? value.get<std::string>() : value.dump());
  }
  if (label.empty()) label = settings.workload + " / " + settings.backend;
  if (include_ranks && label.find("ranks=") == std::string::npos) {
    label += fmt::format(" ranks={}", settings.ranks);
  }
  return label;
}

std::string quoted_label(const std::string& label) {
  std::string escaped;
  // gnuplot reads a double-quoted column header or row label with backslash escapes: \ must be
  // doubled; a " is written as ' (no escape of it survives every gnuplot version).
  for (const char c : label) {
    if (c == '"') {
      escaped += '\'';
    } else {
      escaped += c;
      if (c == '\\') escaped += '\\';
    }
  }
  return "\"" + escaped + "\"";
}

std::string block_title(const std::string& title) { return quoted_label(title) + "\n"; }

}  // namespace harness
