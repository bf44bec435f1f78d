#include "harness/cli/study_loading.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/common/errors.h"
#include "harness/study/validate.h"

namespace harness {

int report_error(const Error& error) {
  std::cerr << "harness: " << error.what() << "\n";
  return dynamic_cast<const ConfigError*>(&error) != nullptr ? kExitBadInput : kExitFailure;
}

LoadedStudy load_study(const std::string& experiment_path, const std::string& launcher) {
  LoadedStudy study;
  study.experiment = load_experiment(experiment_path);
  if (!launcher.empty() && launcher != study.experiment.launcher.name) {
    LauncherSpec spec;
    spec.name = launcher;
    spec.where = "--launcher";
    study.experiment.launcher = spec;
  }
  study.points = expand(study.experiment);
  study.scheduler = make_scheduler(study.experiment.launcher);
  validate_points(study.experiment, study.points, study.scheduler->limits());
  return study;
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
