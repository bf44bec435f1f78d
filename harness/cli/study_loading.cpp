#include "harness/cli/study_loading.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "harness/check/check_options.h"
#include "harness/cli/commands.h"
#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/study/validate.h"

namespace harness {

int report_error(const Error& error) {
  std::cerr << "harness: " << error.what() << "\n";
  return dynamic_cast<const ConfigError*>(&error) != nullptr ? kExitBadInput : kExitFailure;
}

namespace {

// The experiment with `overrides` ("KEY=VALUE", VALUE as JSON or else a string) in its settings.
Experiment with_overrides(const Experiment& experiment, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return experiment;
  Json root = Json::parse(experiment.source_text);
  for (const auto& override : overrides) {
    const auto equals = override.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw ConfigError(fmt::format("--set {}: expected KEY=VALUE, such as inject_comm_delay_us=100",
                                    describe_text(override)));
    }
    const std::string key = override.substr(0, equals);
    const std::string text = override.substr(equals + 1);
    for (const auto& axis : experiment.sweep) {
      if (axis.key == key) {
        throw ConfigError(fmt::format("--set {}: {} is swept in {} ({}); --set fixes a setting for every point",
                                      key, key, experiment.source_path, axis.path));
      }
    }
    Json value;
    try {
      value = Json::parse(text);
    } catch (const Json::exception&) {
      value = text;  // backend=ring (and 1e999, which the setting then refuses as a string)
    }
    PointSettings check;
    apply_setting(check, key, value, "--set " + key);
    root["settings"][key] = value;
  }
  return parse_experiment(root.dump(2) + "\n", experiment.source_path);
}

}  // namespace

LoadedStudy load_study(const std::string& experiment_path, const std::string& launcher,
                       const std::vector<std::string>& overrides) {
  LoadedStudy study;
  study.experiment = with_overrides(load_experiment(experiment_path), overrides);
  if (!launcher.empty() && launcher != study.experiment.launcher.name) {
    LauncherSpec spec;
    spec.name = launcher;
    spec.where = "--launcher";
    study.experiment.launcher = spec;
  }
  // A mistake in the check block is found now, not after the sweep.
  if (!study.experiment.check.empty()) {
    CheckOptions check = default_check_options();
    apply_check_block(check, study.experiment.check, experiment_path + ": check");
  }
  study.points = expand(study.experiment);
  study.scheduler = make_scheduler(study.experiment.launcher);
  validate_points(study.experiment, study.points, study.scheduler->limits());
  return study;
}

Experiment load_stored_experiment(const ResultsDirectory& directory, const std::string& prefix) {
  if (!std::filesystem::exists(directory.experiment_copy())) {
    throw ConfigError(fmt::format("{}{}: not a results directory (no experiment.json)", prefix, directory.path()));
  }
  return load_experiment(directory.experiment_copy());
}

std::string default_out_dir(const std::string& experiment_name) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return fmt::format("results/{}/{}", experiment_name, stamp);
}

std::string self_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw LaunchError("cannot resolve /proc/self/exe to start the rank program");
  return path.string();
}

}  // namespace harness
