#include "harness/study/sweep.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {

std::vector<Point> expand(const Experiment& experiment) {
  // Dimensions of the product: a plain axis alone, or all the axes of one zip group.
  std::vector<std::vector<std::size_t>> dimensions;
  std::vector<int> group_dimension;
  for (std::size_t a = 0; a < experiment.sweep.size(); ++a) {
    const int group = experiment.sweep[a].zip_group;
    if (group < 0) {
      dimensions.push_back({a});
      continue;
    }
    if (static_cast<std::size_t>(group) >= group_dimension.size()) {
      group_dimension.resize(group + 1, -1);
    }
    if (group_dimension[group] < 0) {
      group_dimension[group] = static_cast<int>(dimensions.size());
      dimensions.emplace_back();
    }
    dimensions[group_dimension[group]].push_back(a);
  }
  const auto length = [&](const std::vector<std::size_t>& dimension) {
    return experiment.sweep[dimension.front()].values.size();
  };

  std::size_t count = 1;
  for (const auto& dimension : dimensions) {
    count *= length(dimension);
    if (count > kMaxPoints) {
      throw ConfigError(fmt::format(
          "{}: sweep: expected at most {} points in all, but the lists multiply to more (at "
          "\"{}\")",
          experiment.source_path, kMaxPoints, experiment.sweep[dimension.front()].key));
    }
  }
  // The distinct combinations, in odometer order (last dimension fastest).
  std::vector<PointSettings> combinations;
  std::vector<std::size_t> position(dimensions.size(), 0);
  while (true) {
    PointSettings settings = experiment.base;
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      for (const std::size_t a : dimensions[d]) {
        const SweepAxis& axis = experiment.sweep[a];
        apply_setting(settings, axis.key, axis.values[position[d]],
                      experiment.source_path + ": " + axis.path);
      }
    }
    combinations.push_back(std::move(settings));
    std::size_t d = dimensions.size();
    bool done = true;
    while (d > 0) {
      --d;
      if (++position[d] < length(dimensions[d])) {
        done = false;
        break;
      }
      position[d] = 0;
    }
    if (done) break;
  }

  // Exclude rules: a rule drops a combination when every key it names has one of its values.
  std::vector<bool> rule_used(experiment.exclude.size(), false);
  std::vector<PointSettings> kept;
  for (auto& settings : combinations) {
    const Json values = to_json(settings);
    bool excluded = false;
    for (std::size_t r = 0; r < experiment.exclude.size(); ++r) {
      const bool matches = std::all_of(
          experiment.exclude[r].begin(), experiment.exclude[r].end(), [&values](const auto& term) {
            return std::find(term.second.begin(), term.second.end(), values[term.first]) !=
                   term.second.end();
          });
      if (matches) {
        rule_used[r] = true;
        excluded = true;
      }
    }
    if (!excluded) kept.push_back(std::move(settings));
  }
  for (std::size_t r = 0; r < rule_used.size(); ++r) {
    if (!rule_used[r]) {
      throw ConfigError(fmt::format(
          "{}: exclude[{}]: matches no point of the sweep; expected values that the settings or "
          "the sweep produce",
          experiment.source_path, r));
    }
  }
  if (kept.empty()) {
    throw ConfigError(fmt::format("{}: exclude: removes every point; expected at least one to remain",
                                  experiment.source_path));
  }
  // Equal values written differently (1 and 1.0 in a zip group) would make two points with the
  // same settings, hash and record.
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto [where, inserted] = seen.emplace(to_json(kept[i]).dump(), i);
    if (!inserted) {
      throw ConfigError(fmt::format(
          "{}: sweep: combinations {} and {} have the same settings; each may appear once",
          experiment.source_path, where->second, i));
    }
  }
  if (!experiment.baseline.empty()) {
    const bool found = std::any_of(kept.begin(), kept.end(), [&experiment](const PointSettings& settings) {
      const Json values = to_json(settings);
      return std::all_of(experiment.baseline.items().begin(), experiment.baseline.items().end(),
                         [&values](const auto& item) { return values[item.key()] == item.value(); });
    });
    if (!found) {
      throw ConfigError(fmt::format(
          "{}: baseline: no point has {}; expected values that the settings or the sweep produce",
          experiment.source_path, experiment.baseline.dump()));
    }
  }
  if (kept.size() * static_cast<std::size_t>(experiment.repeats) > kMaxPoints) {
    throw ConfigError(fmt::format("{}: repeats: expected at most {} points in all, got {} × {}",
                                  experiment.source_path, kMaxPoints, kept.size(),
                                  experiment.repeats));
  }

  // Repeats run the whole sweep again rather than one point several times in a row, so that a
  // slow spell of the machine spreads over all points instead of hitting one.
  std::vector<Point> points;
  for (int repeat = 0; repeat < experiment.repeats; ++repeat) {
    for (const auto& settings : kept) {
      Point point;
      point.index = static_cast<int>(points.size());
      point.repeat = repeat;
      point.settings = settings;
      point.key = PointKey(point.settings, repeat);
      point.id = point_id(point.index, point.key);
      points.push_back(std::move(point));
    }
  }
  return points;
}

std::string describe_point(const Experiment& experiment, const Point& point) {
  const Json values = to_json(point.settings);
  std::string text = (point.settings.kind == Kind::kComm ? "comm" : point.settings.workload) + " " +
                     point.settings.backend;
  for (const auto& axis : experiment.sweep) {
    if (axis.key == "workload" || axis.key == "backend") continue;
    text += fmt::format(" {}={}", axis.key, values[axis.key].dump());
  }
  if (experiment.repeats > 1) text += fmt::format(" repeat={}/{}", point.repeat + 1, experiment.repeats);
  return text;
}

}  // namespace harness
