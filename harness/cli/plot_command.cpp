#include <iostream>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/cli/study_loading.h"
#include "harness/common/errors.h"
#include "harness/results/report.h"
#include "harness/results/result_set.h"

namespace harness {

int plot_command(const std::string& results_dir) {
  const ResultsDirectory directory(results_dir);
  Experiment experiment;
  std::vector<Point> points;
  try {
    experiment = load_stored_experiment(directory);
    points = expand(experiment);
  } catch (const Error& error) {
    return report_error(error);
  }
  try {
    // Records are found by their PointKey, not by file name: a newer harness plots the results
    // of an older one. Plotting reads only, so it does not wait for a run's lock.
    const ResultSet set = ResultSet::load(directory, experiment, points, true);
    if (set.runs().empty()) {
      throw Error(fmt::format("{}: no records of this experiment's points in {}", results_dir,
                              directory.points_dir()));
    }
    const WrittenReports written = write_reports(set, directory);
    print_reports(written, directory);
    // Drawing is what was asked for here: without gnuplot the command has not done it.
    if (!written.plots_not_drawn.empty() || !written.plots_failed.empty()) return kExitFailure;
  } catch (const Error& error) {
    return report_error(error);
  }
  return kExitOk;
}

}  // namespace harness
