#include "harness/experiment.h"

#include <cstdint>
#include <fstream>
#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/errors.h"
#include "harness/launcher.h"

namespace harness {
namespace {

const std::vector<std::string_view> kTopLevelKeys = {"name", "description", "launcher", "settings",
                                                     "sweep"};

std::string unknown_key_message(const std::string& where, const std::string& key,
                                const std::vector<std::string_view>& valid) {
  const std::string suggestion = closest_name(key, valid);
  if (!suggestion.empty()) {
    return fmt::format("{}: unknown key \"{}\" (did you mean \"{}\"?)", where, key, suggestion);
  }
  return fmt::format("{}: unknown key \"{}\" (expected one of: {})", where, key,
                     fmt::join(valid, ", "));
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open experiment file", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

constexpr std::size_t kMaxNameLength = 100;

bool is_directory_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength || name[0] == '.' || name[0] == '-') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
  });
}

uint64_t fnv1a_64(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace

Experiment load_experiment(const std::string& path) {
  return parse_experiment(read_file_text(path), path);
}

Experiment parse_experiment(const std::string& text, const std::string& source_path) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& error) {
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line 3, ...".
    std::string what = error.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    throw ConfigError(fmt::format("{}: invalid JSON: {}", source_path, what));
  }
  if (!root.is_object()) {
    throw ConfigError(fmt::format("{}: expected a JSON object at the top level, got {}",
                                  source_path, describe_json(root)));
  }

  Experiment experiment;
  experiment.source_path = source_path;
  experiment.source_text = text;
  for (const auto& [key, value] : root.items()) {
    if (std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), key) == kTopLevelKeys.end()) {
      throw ConfigError(unknown_key_message(source_path, key, kTopLevelKeys));
    }
  }

  const std::string name_where = source_path + ": name";
  if (!root.contains("name")) throw ConfigError(name_where + ": required key is missing");
  if (!root["name"].is_string() || !is_directory_name(root["name"].get<std::string>())) {
    throw ConfigError(fmt::format(
        "{}: expected up to {} letters, digits, '_', '.' and '-', not starting with '.' or '-' "
        "(it names a directory), got {}",
        name_where, kMaxNameLength, describe_json(root["name"])));
  }
  experiment.name = root["name"].get<std::string>();

  if (root.contains("description")) {
    if (!root["description"].is_string()) {
      throw ConfigError(fmt::format("{}: description: expected a string, got {}", source_path,
                                    describe_json(root["description"])));
    }
    experiment.description = root["description"].get<std::string>();
  }

  if (root.contains("launcher")) {
    const Json& launcher = root["launcher"];
    const auto& names = launcher_names();
    if (!launcher.is_string() ||
        std::find(names.begin(), names.end(), launcher.get<std::string>()) == names.end()) {
      throw ConfigError(fmt::format("{}: launcher: expected one of: {}, got {}", source_path,
                                    fmt::join(names, ", "), describe_json(launcher)));
    }
    experiment.launcher = launcher.get<std::string>();
  }

  std::set<std::string> fixed_keys;
  if (root.contains("settings")) {
    const Json& settings = root["settings"];
    if (!settings.is_object()) {
      throw ConfigError(fmt::format("{}: settings: expected an object, got {}", source_path,
                                    describe_json(settings)));
    }
    for (const auto& [key, value] : settings.items()) {
      apply_setting(experiment.base, key, value, fmt::format("{}: settings.{}", source_path, key));
      fixed_keys.insert(key);
    }
  }

  if (root.contains("sweep")) {
    const Json& sweep = root["sweep"];
    if (!sweep.is_object()) {
      throw ConfigError(fmt::format("{}: sweep: expected an object of lists, got {}", source_path,
                                    describe_json(sweep)));
    }
    for (const auto& [key, values] : sweep.items()) {
      const std::string where = fmt::format("{}: sweep.{}", source_path, key);
      if (key == "kind") {
        throw ConfigError(where + ": \"kind\" cannot be swept (an experiment either trains or "
                                  "benchmarks communication); set it in \"settings\"");
      }
      if (fixed_keys.count(key) != 0) {
        throw ConfigError(where + ": key is also in \"settings\"; set it in one place only");
      }
      if (!values.is_array() || values.empty()) {
        throw ConfigError(fmt::format("{}: expected a non-empty list of values, got {}", where,
                                      describe_json(values)));
      }
      SweepAxis axis{key, {}};
      for (std::size_t i = 0; i < values.size(); ++i) {
        // Validate each value now, so a bad one is reported before anything runs.
        PointSettings scratch = experiment.base;
        apply_setting(scratch, key, values[i], fmt::format("{}[{}]", where, i));
        if (std::find(axis.values.begin(), axis.values.end(), values[i]) != axis.values.end()) {
          throw ConfigError(fmt::format("{}[{}]: duplicate value {}; each value may appear once",
                                        where, i, describe_json(values[i])));
        }
        axis.values.push_back(values[i]);
      }
      experiment.sweep.push_back(std::move(axis));
    }
  }
  return experiment;
}

std::vector<Point> expand(const Experiment& experiment) {
  std::size_t count = 1;
  for (const auto& axis : experiment.sweep) {
    count *= axis.values.size();
    if (count > kMaxPoints) {
      throw ConfigError(fmt::format(
          "{}: sweep: expected at most {} points in all, but the lists multiply to more (at "
          "\"{}\")",
          experiment.source_path, kMaxPoints, axis.key));
    }
  }
  std::vector<Point> points;
  std::vector<std::size_t> position(experiment.sweep.size(), 0);
  while (true) {
    Point point;
    point.index = static_cast<int>(points.size());
    point.settings = experiment.base;
    for (std::size_t axis = 0; axis < experiment.sweep.size(); ++axis) {
      const SweepAxis& sweep_axis = experiment.sweep[axis];
      apply_setting(point.settings, sweep_axis.key, sweep_axis.values[position[axis]],
                    experiment.source_path + ": sweep." + sweep_axis.key);
    }
    point.id = point_id(point.index, point.settings);
    points.push_back(std::move(point));

    // Odometer increment, last axis fastest.
    std::size_t axis = experiment.sweep.size();
    while (axis > 0) {
      --axis;
      if (++position[axis] < experiment.sweep[axis].values.size()) break;
      position[axis] = 0;
      if (axis == 0) return points;
    }
    if (experiment.sweep.empty()) return points;
  }
}

std::string point_id(int index, const PointSettings& settings) {
  const uint64_t hash = fnv1a_64(to_json(settings).dump());
  return fmt::format("p{:03}-{:08x}", index, static_cast<uint32_t>(hash ^ (hash >> 32)));
}

}  // namespace harness
