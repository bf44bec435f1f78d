#include "harness/experiment.h"

#include <cstdint>
#include <fstream>
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/errors.h"
#include "harness/launcher.h"
#include "harness/version.h"

namespace harness {
namespace {

// "$schema" lets editors find experiments/schema.json; the harness ignores its value.
const std::vector<std::string_view> kTopLevelKeys = {
    "name", "description", "launcher", "settings", "sweep", "exclude", "repeats", "baseline",
    "$schema"};
constexpr int kMaxRepeats = 1000;

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

  if (root.contains("repeats")) {
    const Json& repeats = root["repeats"];
    if (!repeats.is_number_integer() || repeats.get<int64_t>() < 1 ||
        repeats.get<int64_t>() > kMaxRepeats) {
      throw ConfigError(fmt::format("{}: repeats: expected an integer from 1 to {}, got {}",
                                    source_path, kMaxRepeats, describe_json(repeats)));
    }
    experiment.repeats = repeats.get<int>();
  }

  // The value a setting takes once read, as to_json writes it (so 2.0 and 2 compare equal).
  const auto normalised = [&experiment](const std::string& key, const Json& value,
                                        const std::string& where) {
    PointSettings scratch = experiment.base;
    apply_setting(scratch, key, value, where);
    return to_json(scratch)[key];
  };

  if (root.contains("exclude")) {
    const Json& rules = root["exclude"];
    const std::string where = source_path + ": exclude";
    if (!rules.is_array() || rules.empty()) {
      throw ConfigError(fmt::format("{}: expected a non-empty list of objects, got {}", where,
                                    describe_json(rules)));
    }
    for (std::size_t r = 0; r < rules.size(); ++r) {
      const std::string rule_where = fmt::format("{}[{}]", where, r);
      if (!rules[r].is_object() || rules[r].empty()) {
        throw ConfigError(fmt::format("{}: expected an object of setting values, got {}",
                                      rule_where, describe_json(rules[r])));
      }
      std::vector<std::pair<std::string, std::vector<Json>>> rule;
      for (const auto& [key, value] : rules[r].items()) {
        const std::string key_where = rule_where + "." + key;
        std::vector<Json> values;
        if (value.is_array()) {
          if (value.empty()) {
            throw ConfigError(key_where + ": expected a value or a non-empty list of values, got []");
          }
          for (std::size_t i = 0; i < value.size(); ++i) {
            values.push_back(normalised(key, value[i], fmt::format("{}[{}]", key_where, i)));
          }
        } else {
          values.push_back(normalised(key, value, key_where));
        }
        rule.emplace_back(key, std::move(values));
      }
      experiment.exclude.push_back(std::move(rule));
    }
  }

  if (root.contains("baseline")) {
    const Json& baseline = root["baseline"];
    const std::string where = source_path + ": baseline";
    if (!baseline.is_object() || baseline.empty()) {
      throw ConfigError(fmt::format("{}: expected an object of setting values, got {}", where,
                                    describe_json(baseline)));
    }
    for (const auto& [key, value] : baseline.items()) {
      if (key == "kind") throw ConfigError(where + ".kind: a baseline cannot change \"kind\"");
      experiment.baseline[key] = normalised(key, value, where + "." + key);
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
      point.id = point_id(point.index, point.settings, repeat);
      points.push_back(std::move(point));
    }
  }
  return points;
}

std::string point_hash(const PointSettings& settings, int repeat) {
  const uint64_t hash =
      fnv1a_64(fmt::format("{}|{}|{}", kHarnessVersion, repeat, to_json(settings).dump()));
  return fmt::format("{:08x}", static_cast<uint32_t>(hash ^ (hash >> 32)));
}

std::string point_id(int index, const PointSettings& settings, int repeat) {
  return fmt::format("p{:03}-{}", index, point_hash(settings, repeat));
}

}  // namespace harness
