#include "harness/study/experiment.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/text.h"
#include "harness/study/builds.h"
#include "harness/study/json_document.h"

namespace harness {
namespace {

// "$schema" lets editors find experiments/schema.json; the harness ignores its value.
const std::vector<std::string_view> kTopLevelKeys = {
    "name", "description", "launcher", "settings", "sweep", "exclude", "repeats", "baseline",
    "check", "convergence", "builds", "$schema"};
constexpr int kMaxRepeats = 1000;

std::string unknown_key_message(const std::string& where, const std::string& key,
                                const std::vector<std::string_view>& valid) {
  const std::string suggestion = closest_name(key, valid);
  if (!suggestion.empty()) {
    return fmt::format("{}: unknown key {} (did you mean \"{}\"?)", where, describe_text(key),
                       suggestion);
  }
  return fmt::format("{}: unknown key {} (expected one of: {})", where, describe_text(key),
                     fmt::join(valid, ", "));
}

// Experiment files are a few KB; the cap keeps /dev/zero or a mistaken huge file from filling
// the memory.
constexpr ExpectedFile kExperimentFile{"experiment file", "an experiment file (JSON)", std::size_t{16} << 20};

constexpr std::size_t kMaxNameLength = 100;

// "launcher": "local", or {"name": "local", <that scheduler's options>}. The name and options are
// checked against the scheduler table when the launcher is made (launch/scheduler.h).
LauncherSpec read_launcher(const Json& value, const std::string& source_path) {
  const std::string where = source_path + ": launcher";
  LauncherSpec spec;
  spec.where = where;
  if (value.is_string() && !value.get_ref<const std::string&>().empty()) {
    spec.name = value.get<std::string>();
    return spec;
  }
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string() ||
      value["name"].get_ref<const std::string&>().empty()) {
    throw ConfigError(fmt::format(
        "{}: expected a launcher name, or an object with \"name\" and that launcher's options, "
        "got {}",
        where, describe_json(value)));
  }
  spec.name = value["name"].get<std::string>();
  for (const auto& [key, option] : value.items()) {
    if (key != "name") spec.options[key] = option;
  }
  return spec;
}

}  // namespace

Experiment load_experiment(const std::string& path) {
  return parse_experiment(read_text_file(path, kExperimentFile), path);
}

Experiment parse_experiment(const std::string& text, const std::string& source_path) {
  Json root = parse_json_document(text, source_path);
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
  if (!root["name"].is_string() || !is_plain_name(root["name"].get<std::string>(), kMaxNameLength)) {
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

  if (root.contains("launcher")) experiment.launcher = read_launcher(root["launcher"], source_path);
  if (root.contains("builds")) experiment.builds = read_builds(root["builds"], source_path + ": builds");

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
        if (values.is_array() && values.empty()) {
          throw ConfigError(where +
                            ": expected an object of equally long lists, or a non-empty list of "
                            "such objects, got []");
        }
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

  use_builds(experiment);

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

  if (root.contains("convergence")) {
    const Json& block = root["convergence"];
    const std::string where = source_path + ": convergence";
    if (!block.is_object() || block.empty()) {
      throw ConfigError(fmt::format("{}: expected an object with \"loss_band\" and/or \"accuracy_band\", got {}",
                                    where, describe_json(block)));
    }
    for (const auto& [key, value] : block.items()) {
      if (key != "loss_band" && key != "accuracy_band") {
        throw ConfigError(unknown_key_message(where, key, {"loss_band", "accuracy_band"}));
      }
      const bool accuracy = key == "accuracy_band";
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0 ||
          (accuracy && value.get<double>() > 100)) {
        throw ConfigError(fmt::format("{}.{}: expected {}, got {}", where, key,
                                      accuracy ? "percentage points from 0 to 100" : "a non-negative number",
                                      describe_json(value)));
      }
      experiment.convergence[key] = value.get<double>();
    }
  }

  if (root.contains("check")) {
    if (!root["check"].is_object()) {
      throw ConfigError(fmt::format("{}: check: expected an object with \"against\" and \"metrics\", got {}",
                                    source_path, describe_json(root["check"])));
    }
    experiment.check = root["check"];
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

}  // namespace harness
