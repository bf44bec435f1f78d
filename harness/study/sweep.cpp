#include "harness/study/sweep.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"

namespace harness {

namespace {

// Why a point may not read a setting it holds (settings_not_read), for the messages that say so.
constexpr std::string_view kWhySettingsGoUnread =
    "owned by another workload, backend, scheme or kind, or unused where they are: a delay's rank without a delay, GPU "
    "staging's on the CPU, hier's crossover on one node, ps_server_trains or a compute delay in a comm benchmark";

// A dimension of the product: a plain axis alone, or all the axes of one zip group (indices into
// experiment.sweep).
using Dimension = std::vector<std::size_t>;

std::vector<Dimension> sweep_dimensions(const Experiment& experiment) {
  std::vector<Dimension> dimensions;
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
  return dimensions;
}

std::size_t dimension_length(const Experiment& experiment, const Dimension& dimension) {
  return experiment.sweep[dimension.front()].values.size();
}

// Throws before the product is built when it would exceed kMaxPoints.
void check_product_size(const Experiment& experiment, const std::vector<Dimension>& dimensions) {
  std::size_t count = 1;
  for (const auto& dimension : dimensions) {
    count *= dimension_length(experiment, dimension);
    if (count > kMaxPoints) {
      throw ConfigError(fmt::format(
          "{}: sweep: expected at most {} points in all, but the lists multiply to more (at "
          "\"{}\")",
          experiment.source_path, kMaxPoints, experiment.sweep[dimension.front()].key));
    }
  }
}

// The distinct combinations, in odometer order (last dimension fastest).
std::vector<PointSettings> sweep_combinations(const Experiment& experiment,
                                              const std::vector<Dimension>& dimensions) {
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
      if (++position[d] < dimension_length(experiment, dimensions[d])) {
        done = false;
        break;
      }
      position[d] = 0;
    }
    if (done) break;
  }
  return combinations;
}

// Exclude rules: a rule drops a combination when every key it names has one of its values. A rule
// that drops nothing, or rules that drop everything, are errors.
std::vector<PointSettings> apply_exclude_rules(const Experiment& experiment,
                                               std::vector<PointSettings> combinations) {
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
  return kept;
}

// What a point measures: its settings without those it does not read (settings_not_read).
Json measured_settings(const PointSettings& settings) {
  Json values = to_json(settings);
  for (const std::string& key : settings_not_read(settings)) values.erase(key);
  return values;
}

// Equal values written differently (1 and 1.0 in a zip group) would make two points with the
// same settings, hash and record; values of a setting that the points do not read (resnet_depth
// for iris_mlp, inject_compute_delay_rank without a delay) would make two that measure the same.
void check_settings_distinct(const Experiment& experiment, const std::vector<PointSettings>& kept) {
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto [where, inserted] = seen.emplace(measured_settings(kept[i]).dump(), i);
    if (inserted) continue;
    const Json first = to_json(kept[where->second]);
    const Json second = to_json(kept[i]);
    std::vector<std::string> differing;
    for (const auto& [key, value] : first.items()) {
      if (second[key] != value) differing.push_back(key);
    }
    if (differing.empty()) {
      throw ConfigError(fmt::format("{}: sweep: combinations {} and {} have the same settings; each may appear once",
                                    experiment.source_path, where->second, i));
    }
    throw ConfigError(fmt::format(
        "{}: sweep: combinations {} and {} measure the same thing: they differ only in {}, which their points do "
        "not read ({}); zip the settings that go together, or exclude one",
        experiment.source_path, where->second, i, fmt::join(differing, ", "), kWhySettingsGoUnread));
  }
}

void check_baseline_found(const Experiment& experiment, const std::vector<PointSettings>& kept) {
  if (experiment.baseline.empty()) return;
  const bool found = std::any_of(kept.begin(), kept.end(), [&experiment](const PointSettings& settings) {
    return has_values(settings, experiment.baseline);
  });
  if (!found) {
    throw ConfigError(fmt::format(
        "{}: baseline: no point has {}; expected values that the settings or the sweep produce",
        experiment.source_path, experiment.baseline.dump()));
  }
}

// Repeats run the whole sweep again rather than one point several times in a row, so that a
// slow spell of the machine spreads over all points instead of hitting one; and every second
// repeat runs it backwards (A B, B A, A B, ...), so that no point always runs right after the
// same other one. What a point leaves behind for the next (on a 2-vCPU VM, an MPI_Allreduce point
// right after another was 2-3x slower in 9 of 20 pairs, the first of the pair in 1 of 20) then
// falls on both sides of a comparison, as the two builds of CI's gate (docs/ci-gate.md).
std::vector<Point> repeated_points(const Experiment& experiment, const std::vector<PointSettings>& kept) {
  if (kept.size() * static_cast<std::size_t>(experiment.repeats) > kMaxPoints) {
    throw ConfigError(fmt::format("{}: repeats: expected at most {} points in all, got {} × {}",
                                  experiment.source_path, kMaxPoints, kept.size(),
                                  experiment.repeats));
  }
  std::vector<Point> points;
  for (int repeat = 0; repeat < experiment.repeats; ++repeat) {
    const bool backwards = repeat % 2 == 1;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const PointSettings& settings = kept[backwards ? kept.size() - 1 - i : i];
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

}  // namespace

std::vector<Point> expand(const Experiment& experiment) {
  const std::vector<Dimension> dimensions = sweep_dimensions(experiment);
  check_product_size(experiment, dimensions);
  const std::vector<PointSettings> kept =
      apply_exclude_rules(experiment, sweep_combinations(experiment, dimensions));
  check_settings_distinct(experiment, kept);
  check_baseline_found(experiment, kept);
  return repeated_points(experiment, kept);
}

std::string unread_settings_warning(const Experiment& experiment, const std::vector<Point>& points) {
  if (points.empty()) return "";
  const Json base = to_json(experiment.base);
  static const Json defaults = to_json(PointSettings{});
  // The changed settings that every point leaves unread: those left unread by the first point,
  // less any another point reads.
  const std::vector<std::string> first = settings_not_read(points.front().settings);
  std::vector<std::string> unread;  // in the order of the settings table
  for (const auto& [key, value] : base.items()) {
    if (value != defaults[key] && std::find(first.begin(), first.end(), key) != first.end()) unread.push_back(key);
  }
  for (const Point& point : points) {
    const std::vector<std::string> not_read = settings_not_read(point.settings);
    std::erase_if(unread, [&not_read](const std::string& key) {
      return std::find(not_read.begin(), not_read.end(), key) == not_read.end();
    });
  }
  if (unread.empty()) return "";
  return fmt::format("{}: settings {}: no point reads {} ({}), so {} nothing", experiment.source_path,
                     fmt::join(unread, ", "), unread.size() == 1 ? "it" : "them", kWhySettingsGoUnread,
                     unread.size() == 1 ? "it changes" : "they change");
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
