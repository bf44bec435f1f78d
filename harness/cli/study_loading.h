// What the commands that read an experiment file share: loading it, expanding its points, making
// its scheduler and validating the points against what that scheduler can give.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/launch/rank_programs.h"
#include "harness/launch/scheduler.h"
#include "harness/results/results_directory.h"
#include "harness/study/experiment.h"
#include "harness/study/sweep.h"

namespace harness {

struct LoadedStudy {
  Experiment experiment;
  std::vector<Point> points;
  std::unique_ptr<Scheduler> scheduler;
  RankPrograms rank_programs;  // this binary and the experiment's builds, probed
};

// What `harness run` changes in an experiment from the command line. The changes go into the
// experiment's text, and so into the copy its results keep.
struct StudyChanges {
  std::string launcher;               // --launcher NAME: replaces the experiment's ("" = keep)
  std::vector<std::string> settings;  // --set KEY=VALUE: fixes a setting for every point
  std::vector<std::string> sweeps;    // --sweep JSON: sweeps more settings (the file's "sweep" form)
  std::vector<std::string> builds;    // --build NAME=PATH: names a build (study/builds.h)
};

// Throws ConfigError naming the file and field (or the option) for anything wrong; nothing runs.
// A launcher named on the command line keeps the experiment's options for it when it names the
// same one. Builds' paths are made absolute (from the working directory) and each build is probed.
LoadedStudy load_study(const std::string& experiment_path, const StudyChanges& changes = {});

// What `run` refuses before it creates anything, and `run --dry-run` therefore too: an --out that
// cannot be made or holds something else (`out_dir` "" = the default, new), and --detach with a
// launcher whose jobs end with the harness. Throws ConfigError.
void check_run_target(const LoadedStudy& study, const ResultsDirectory& directory, bool out_given, bool detach);

// The experiment a results directory keeps (DIR/experiment.json). Throws ConfigError
// "<prefix><dir>: not a results directory (no experiment.json)" when there is none.
Experiment load_stored_experiment(const ResultsDirectory& directory, const std::string& prefix = "");

// results/<experiment name>/<local time>, or with -2, -3, ... added when that exists already.
std::string default_out_dir(const std::string& experiment_name);

// This binary, whose `worker` subcommand the ranks run. Throws LaunchError.
std::string self_executable();

}  // namespace harness
