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
    std::set<std::string> swept_keys;
    int zip_groups = 0;
    // One list of values for `key`, checked value by value so a bad one is reported before
    // anything runs.
    const auto read_axis = [&](const std::string& key, const Json& values, const std::string& where,
                               int zip_group) {
      if (key == "kind") {
        throw ConfigError(where + ": \"kind\" cannot be swept (an experiment either trains or "
                                  "benchmarks communication); set it in \"settings\"");
      }
      if (fixed_keys.count(key) != 0) {
        throw ConfigError(where + ": key is also in \"settings\"; set it in one place only");
      }
      if (!swept_keys.insert(key).second) {
        throw ConfigError(where + ": key is swept twice; sweep it in one place only");
      }
      if (!values.is_array() || values.empty()) {
        throw ConfigError(fmt::format("{}: expected a non-empty list of values, got {}", where,
                                      describe_json(values)));
      }
      SweepAxis axis{key, {}, zip_group, where.substr(source_path.size() + 2)};
      for (std::size_t i = 0; i < values.size(); ++i) {
        PointSettings scratch = experiment.base;
        apply_setting(scratch, key, values[i], fmt::format("{}[{}]", where, i));
        // In a zip group a value may repeat (the tuples must differ; checked below).
        if (zip_group < 0 &&
            std::find(axis.values.begin(), axis.values.end(), values[i]) != axis.values.end()) {
          throw ConfigError(fmt::format("{}[{}]: duplicate value {}; each value may appear once",
                                        where, i, describe_json(values[i])));
        }
        axis.values.push_back(values[i]);
      }
      experiment.sweep.push_back(std::move(axis));
    };
    const auto read_zip = [&](const Json& group, const std::string& where) {
      if (!group.is_object() || group.empty()) {
        throw ConfigError(fmt::format("{}: expected an object of equally long lists, got {}",
                                      where, describe_json(group)));
      }
      const int number = zip_groups++;
      const std::size_t first_axis = experiment.sweep.size();
      for (const auto& [key, values] : group.items()) {
        read_axis(key, values, fmt::format("{}.{}", where, key), number);
        const SweepAxis& first = experiment.sweep[first_axis];
        const SweepAxis& added = experiment.sweep.back();
        if (added.values.size() != first.values.size()) {
          throw ConfigError(fmt::format("{}.{}: expected {} values, as many as {}, got {}", where,
                                        key, first.values.size(), first.path, added.values.size()));
        }
      }
      const std::size_t length = experiment.sweep[first_axis].values.size();
      std::set<std::string> tuples;
      for (std::size_t i = 0; i < length; ++i) {
        Json tuple = Json::array();
        for (std::size_t a = first_axis; a < experiment.sweep.size(); ++a) {
          tuple.push_back(experiment.sweep[a].values[i]);
        }
        if (!tuples.insert(tuple.dump()).second) {
          throw ConfigError(fmt::format("{}: entry {} repeats an earlier one ({}); each "
                                        "combination may appear once",
                                        where, i, tuple.dump()));
        }
      }
    };
    for (const auto& [key, values] : sweep.items()) {
      const std::string where = fmt::format("{}: sweep.{}", source_path, key);
      if (key == "zip") {
        if (values.is_array()) {
          for (std::size_t g = 0; g < values.size(); ++g) read_zip(values[g], fmt::format("{}[{}]", where, g));
        } else {
          read_zip(values, where);
        }
        continue;
      }
      read_axis(key, values, where, -1);
    }
  }
  return experiment;
}

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
  std::vector<Point> points;
  std::vector<std::size_t> position(dimensions.size(), 0);
  while (true) {
    Point point;
    point.index = static_cast<int>(points.size());
    point.settings = experiment.base;
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      for (const std::size_t a : dimensions[d]) {
        const SweepAxis& axis = experiment.sweep[a];
        apply_setting(point.settings, axis.key, axis.values[position[d]],
                      experiment.source_path + ": " + axis.path);
      }
    }
    point.id = point_id(point.index, point.settings);
    points.push_back(std::move(point));

    // Odometer increment, last dimension fastest.
    std::size_t d = dimensions.size();
    while (d > 0) {
      --d;
      if (++position[d] < length(dimensions[d])) break;
      position[d] = 0;
      if (d == 0) return points;
    }
    if (dimensions.empty()) return points;
  }
}

std::string point_id(int index, const PointSettings& settings) {
  const uint64_t hash = fnv1a_64(to_json(settings).dump());
  return fmt::format("p{:03}-{:08x}", index, static_cast<uint32_t>(hash ^ (hash >> 32)));
}

}  // namespace harness
