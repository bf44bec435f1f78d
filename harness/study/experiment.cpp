#include "harness/study/experiment.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/text.h"
#include "harness/study/builds.h"
#include "harness/study/json_document.h"
#include "harness/study/sweep.h"

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

void check_top_level_keys(const Json& root, const std::string& source_path) {
  for (const auto& [key, value] : root.items()) {
    if (std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), key) == kTopLevelKeys.end()) {
      throw ConfigError(unknown_key_message(source_path, key, kTopLevelKeys));
    }
  }
}

std::string read_name(const Json& root, const std::string& source_path) {
  const std::string name_where = source_path + ": name";
  if (!root.contains("name")) throw ConfigError(name_where + ": required key is missing");
  if (!root["name"].is_string() || !is_plain_name(root["name"].get<std::string>(), kMaxNameLength)) {
    throw ConfigError(fmt::format(
        "{}: expected up to {} letters, digits, '_', '.' and '-', not starting with '.' or '-' "
        "(it names a directory), got {}",
        name_where, kMaxNameLength, describe_json(root["name"])));
  }
  return root["name"].get<std::string>();
}

std::string read_description(const Json& description, const std::string& source_path) {
  if (!description.is_string()) {
    throw ConfigError(fmt::format("{}: description: expected a string, got {}", source_path,
                                  describe_json(description)));
  }
  // Printed by plan and run: an escape sequence in it would reach the user's terminal.
  const std::string& text = description.get_ref<const std::string&>();
  const auto control = std::find_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
  });
  if (control != text.end()) {
    throw ConfigError(fmt::format("{}: description: expected text without control characters other than "
                                  "newlines and tabs, got {} at character {}",
                                  source_path, describe_text(std::string(1, *control)), control - text.begin()));
  }
  return text;
}

// Applies "settings" to the experiment's base point; returns the keys it set (they may not also
// be swept).
std::set<std::string> read_settings(const Json& settings, const std::string& source_path,
                                    PointSettings& base) {
  if (!settings.is_object()) {
    throw ConfigError(fmt::format("{}: settings: expected an object, got {}", source_path,
                                  describe_json(settings)));
  }
  std::set<std::string> fixed_keys;
  for (const auto& [key, value] : settings.items()) {
    apply_setting(base, key, value, fmt::format("{}: settings.{}", source_path, key));
    fixed_keys.insert(key);
  }
  return fixed_keys;
}

// Reads "sweep" into experiment.sweep: plain axes and "zip" groups of equally long axes.
class SweepReader {
 public:
  SweepReader(Experiment& experiment, const std::string& source_path,
              const std::set<std::string>& fixed_keys)
      : experiment_(experiment), source_path_(source_path), fixed_keys_(fixed_keys) {}

  void read(const Json& sweep) {
    if (!sweep.is_object()) {
      throw ConfigError(fmt::format("{}: sweep: expected an object of lists, got {}", source_path_,
                                    describe_json(sweep)));
    }
    for (const auto& [key, values] : sweep.items()) {
      const std::string where = fmt::format("{}: sweep.{}", source_path_, key);
      if (key == "zip") {
        read_zip_groups(values, where);
        continue;
      }
      read_axis(key, values, where, -1);
    }
  }

 private:
  void read_zip_groups(const Json& values, const std::string& where) {
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
  }

  // One list of values for `key`, checked value by value so a bad one is reported before
  // anything runs.
  void read_axis(const std::string& key, const Json& values, const std::string& where,
                 int zip_group) {
    if (key == "kind") {
      throw ConfigError(where + ": \"kind\" cannot be swept (an experiment either trains or "
                                "benchmarks communication); set it in \"settings\"");
    }
    if (fixed_keys_.count(key) != 0) {
      throw ConfigError(where + ": key is also in \"settings\"; set it in one place only");
    }
    if (!swept_keys_.insert(key).second) {
      throw ConfigError(where + ": key is swept twice; sweep it in one place only");
    }
    if (!values.is_array() || values.empty()) {
      throw ConfigError(fmt::format("{}: expected a non-empty list of values, got {}", where,
                                    describe_json(values)));
    }
    // No list can be longer than the points it makes (refused at once, not after reading every value).
    if (values.size() > kMaxPoints) {
      throw ConfigError(fmt::format("{}: expected at most {} values (the limit on points in all), got {}",
                                    where, kMaxPoints, values.size()));
    }
    SweepAxis axis{key, {}, zip_group, where.substr(source_path_.size() + 2)};
    std::set<Json> seen;  // ordered as JSON compares: 1 and 1.0 are one value, as with ==
    for (std::size_t i = 0; i < values.size(); ++i) {
      PointSettings scratch = experiment_.base;
      apply_setting(scratch, key, values[i], fmt::format("{}[{}]", where, i));
      // In a zip group a value may repeat (the tuples must differ; checked below).
      if (zip_group < 0 && !seen.insert(values[i]).second) {
        throw ConfigError(fmt::format("{}[{}]: duplicate value {}; each value may appear once",
                                      where, i, describe_json(values[i])));
      }
      axis.values.push_back(values[i]);
    }
    experiment_.sweep.push_back(std::move(axis));
  }

  void read_zip(const Json& group, const std::string& where) {
    if (!group.is_object() || group.empty()) {
      throw ConfigError(fmt::format("{}: expected an object of equally long lists, got {}",
                                    where, describe_json(group)));
    }
    const int number = zip_groups_++;
    const std::size_t first_axis = experiment_.sweep.size();
    for (const auto& [key, values] : group.items()) {
      read_axis(key, values, fmt::format("{}.{}", where, key), number);
      const SweepAxis& first = experiment_.sweep[first_axis];
      const SweepAxis& added = experiment_.sweep.back();
      if (added.values.size() != first.values.size()) {
        throw ConfigError(fmt::format("{}.{}: expected {} values, as many as {}, got {}", where,
                                      key, first.values.size(), first.path, added.values.size()));
      }
    }
    check_zip_tuples_differ(first_axis, where);
  }

  void check_zip_tuples_differ(std::size_t first_axis, const std::string& where) const {
    const std::size_t length = experiment_.sweep[first_axis].values.size();
    std::set<std::string> tuples;
    for (std::size_t i = 0; i < length; ++i) {
      Json tuple = Json::array();
      for (std::size_t a = first_axis; a < experiment_.sweep.size(); ++a) {
        tuple.push_back(experiment_.sweep[a].values[i]);
      }
      if (!tuples.insert(tuple.dump()).second) {
        throw ConfigError(fmt::format("{}: entry {} repeats an earlier one ({}); each "
                                      "combination may appear once",
                                      where, i, tuple.dump()));
      }
    }
  }

  Experiment& experiment_;
  const std::string& source_path_;
  const std::set<std::string>& fixed_keys_;
  std::set<std::string> swept_keys_;
  int zip_groups_ = 0;
};

int read_repeats(const Json& repeats, const std::string& source_path) {
  // 2.0 is 2, as in the settings (and JSON Schema's "integer").
  const bool whole = repeats.is_number_integer() ||
                     (repeats.is_number_float() && std::isfinite(repeats.get<double>()) &&
                      repeats.get<double>() == std::floor(repeats.get<double>()) && std::abs(repeats.get<double>()) < 1e9);
  if (!whole || repeats.get<double>() < 1 || repeats.get<double>() > kMaxRepeats) {
    throw ConfigError(fmt::format("{}: repeats: expected an integer from 1 to {}, got {}",
                                  source_path, kMaxRepeats, describe_json(repeats)));
  }
  return static_cast<int>(repeats.get<double>());
}

// The value a setting takes once read, as to_json writes it (so 2.0 and 2 compare equal).
Json normalised(const PointSettings& base, const std::string& key, const Json& value,
                const std::string& where) {
  PointSettings scratch = base;
  apply_setting(scratch, key, value, where);
  return to_json(scratch)[key];
}

// One "exclude" rule: each key's value, or list of values, normalised.
std::vector<std::pair<std::string, std::vector<Json>>> read_exclude_rule(
    const Json& rule_json, const std::string& rule_where, const PointSettings& base) {
  if (!rule_json.is_object() || rule_json.empty()) {
    throw ConfigError(fmt::format("{}: expected an object of setting values, got {}",
                                  rule_where, describe_json(rule_json)));
  }
  std::vector<std::pair<std::string, std::vector<Json>>> rule;
  for (const auto& [key, value] : rule_json.items()) {
    const std::string key_where = rule_where + "." + key;
    std::vector<Json> values;
    if (value.is_array()) {
      if (value.empty()) {
        throw ConfigError(key_where + ": expected a value or a non-empty list of values, got []");
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        values.push_back(normalised(base, key, value[i], fmt::format("{}[{}]", key_where, i)));
      }
    } else {
      values.push_back(normalised(base, key, value, key_where));
    }
    rule.emplace_back(key, std::move(values));
  }
  return rule;
}

void read_exclude(const Json& rules, const std::string& source_path, Experiment& experiment) {
  const std::string where = source_path + ": exclude";
  if (!rules.is_array() || rules.empty()) {
    throw ConfigError(fmt::format("{}: expected a non-empty list of objects, got {}", where,
                                  describe_json(rules)));
  }
  for (std::size_t r = 0; r < rules.size(); ++r) {
    experiment.exclude.push_back(
        read_exclude_rule(rules[r], fmt::format("{}[{}]", where, r), experiment.base));
  }
}

void read_convergence(const Json& block, const std::string& source_path, Experiment& experiment) {
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

Json read_check(const Json& check, const std::string& source_path) {
  if (!check.is_object()) {
    throw ConfigError(fmt::format("{}: check: expected an object with \"against\" and \"metrics\", got {}",
                                  source_path, describe_json(check)));
  }
  return check;
}

void read_baseline(const Json& baseline, const std::string& source_path, Experiment& experiment) {
  const std::string where = source_path + ": baseline";
  if (!baseline.is_object() || baseline.empty()) {
    throw ConfigError(fmt::format("{}: expected an object of setting values, got {}", where,
                                  describe_json(baseline)));
  }
  for (const auto& [key, value] : baseline.items()) {
    if (key == "kind") throw ConfigError(where + ".kind: a baseline cannot change \"kind\"");
    experiment.baseline[key] = normalised(experiment.base, key, value, where + "." + key);
    // A key every point shares would make each point its own baseline: speedup 1 everywhere.
    const bool swept = std::any_of(experiment.sweep.begin(), experiment.sweep.end(),
                                   [&key](const SweepAxis& axis) { return axis.key == key; });
    if (!swept) {
      throw ConfigError(fmt::format("{}.{}: not swept; expected a setting that the sweep varies (every point has "
                                    "the same {}, so each would be its own baseline)",
                                    where, key, key));
    }
  }
}

}  // namespace

Experiment load_experiment(const std::string& path, const std::set<std::string>& builds_named_elsewhere) {
  return parse_experiment(read_text_file(path, kExperimentFile), path, builds_named_elsewhere);
}

// Order matters: "settings" before "sweep" (a key is fixed or swept, not both, and swept values
// are checked against the fixed ones), and both before use_builds and the keys whose values are
// normalised against the base.
Experiment parse_experiment(const std::string& text, const std::string& source_path,
                            const std::set<std::string>& builds_named_elsewhere) {
  Json root = parse_json_document(text, source_path);
  if (!root.is_object()) {
    throw ConfigError(fmt::format("{}: expected a JSON object at the top level, got {}",
                                  source_path, describe_json(root)));
  }

  Experiment experiment;
  experiment.source_path = source_path;
  experiment.source_text = text;
  check_top_level_keys(root, source_path);
  experiment.name = read_name(root, source_path);
  if (root.contains("$schema") && !root["$schema"].is_string()) {
    throw ConfigError(fmt::format("{}: $schema: expected a string (the path or URL of experiments/schema.json), got {}",
                                  source_path, describe_json(root["$schema"])));
  }
  if (root.contains("description")) {
    experiment.description = read_description(root["description"], source_path);
  }
  if (root.contains("launcher")) experiment.launcher = read_launcher(root["launcher"], source_path);
  if (root.contains("builds")) experiment.builds = read_builds(root["builds"], source_path + ": builds");

  std::set<std::string> fixed_keys;
  if (root.contains("settings")) fixed_keys = read_settings(root["settings"], source_path, experiment.base);
  if (root.contains("sweep")) SweepReader(experiment, source_path, fixed_keys).read(root["sweep"]);

  experiment.set_keys = fixed_keys;
  for (const auto& axis : experiment.sweep) experiment.set_keys.insert(axis.key);
  use_builds(experiment, fixed_keys.count("build") > 0, builds_named_elsewhere);

  if (root.contains("repeats")) experiment.repeats = read_repeats(root["repeats"], source_path);
  if (root.contains("exclude")) read_exclude(root["exclude"], source_path, experiment);
  if (root.contains("convergence")) read_convergence(root["convergence"], source_path, experiment);
  if (root.contains("check")) experiment.check = read_check(root["check"], source_path);
  if (root.contains("baseline")) read_baseline(root["baseline"], source_path, experiment);
  return experiment;
}

}  // namespace harness
