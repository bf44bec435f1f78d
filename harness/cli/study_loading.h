// What the commands that read an experiment file share: loading it, expanding its points, making
// its scheduler and validating the points against what that scheduler can give.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/launch/scheduler.h"
#include "harness/results/results_directory.h"
#include "harness/study/experiment.h"
#include "harness/study/sweep.h"

namespace harness {

struct LoadedStudy {
  Experiment experiment;
  std::vector<Point> points;
  std::unique_ptr<Scheduler> scheduler;
};

// Throws ConfigError naming the file and field for anything wrong; nothing runs. A non-empty
// `launcher` (run --launcher NAME) replaces the experiment's launcher; the experiment's options
// for it are kept when it names the same one. `overrides` (run --set KEY=VALUE) fix settings for
// every point: they go into the experiment's "settings", and so into the copy its results keep.
LoadedStudy load_study(const std::string& experiment_path, const std::string& launcher = "",
                       const std::vector<std::string>& overrides = {});

// The experiment a results directory keeps (DIR/experiment.json). Throws ConfigError
// "<prefix><dir>: not a results directory (no experiment.json)" when there is none.
Experiment load_stored_experiment(const ResultsDirectory& directory, const std::string& prefix = "");

// results/<experiment name>/<local time>
std::string default_out_dir(const std::string& experiment_name);

// This binary, whose `worker` subcommand the ranks run. Throws LaunchError.
std::string self_executable();

}  // namespace harness
