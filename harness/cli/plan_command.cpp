// `harness plan FILE` and `harness run FILE --dry-run`: everything a run would do, said and not
// done. Validates like a run, then prints every point's exact command as the experiment's
// scheduler would run it, the number of points and rank-slots, and an estimate from earlier
// records; starts no process and creates no directory.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/cli/study_loading.h"
#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/launch/job_ledger.h"
#include "harness/launch/sweep_runner.h"
#include "harness/results/scaling.h"
#include "harness/results/estimate.h"
#include "harness/results/results_directory.h"

namespace harness {

int plan_command(const std::string& experiment_path, const std::string& out_dir, const StudyChanges& changes,
                 bool detach) {
  LoadedStudy study;
  std::unique_ptr<ResultsDirectory> target;
  try {
    study = load_study(experiment_path, changes);
    target = std::make_unique<ResultsDirectory>(out_dir.empty() ? default_out_dir(study.experiment.name) : out_dir);
    check_run_target(study, *target, !out_dir.empty(), detach);
  } catch (const Error& error) {
    return report_error(error);
  }
  const Experiment& experiment = study.experiment;
  const ResultsDirectory& directory = *target;
  std::cout << fmt::format("experiment \"{}\" ({}): {} point(s), launcher {}, results in {}\n",
                           experiment.name, experiment.source_path, study.points.size(),
                           study.scheduler->name(), directory.path());
  if (!experiment.description.empty()) std::cout << experiment.description << "\n";
  const Json base = to_json(experiment.base);
  std::cout << "fixed:";
  for (const auto& [key, value] : base.items()) {
    const bool swept = std::any_of(experiment.sweep.begin(), experiment.sweep.end(),
                                   [&key](const SweepAxis& axis) { return axis.key == key; });
    if (!swept) std::cout << " " << key << "=" << value.dump();
  }
  std::cout << "\n";
  const std::string run_id = new_run_id();
  // As the runner sees the directory: absolute (job scripts hold its paths).
  const ResultsDirectory absolute(std::filesystem::absolute(directory.path()).lexically_normal().string());
  std::string sweep_id;
  try {
    sweep_id = read_ledger(absolute).sweep_id;
  } catch (const Error& error) {
    return report_error(error);
  }
  study.scheduler->prepare({absolute.jobs_dir(), sweep_id, std::filesystem::current_path().string()});
  const std::string root = "results/" + experiment.name;
  const SweepEstimate estimate = estimate_sweep(study.points, root);
  int64_t rank_slots = 0;
  std::vector<JobSpec> jobs;
  for (std::size_t i = 0; i < study.points.size(); ++i) {
    const Point& point = study.points[i];
    jobs.push_back(SweepRunner::job_for(point, absolute, study.rank_programs, run_id));
    jobs.back().expected_s = estimate.earlier_s[i];
    std::cout << fmt::format("  {} {}\n    {}\n", point.id, describe_point(experiment, point),
                             shell_quoted(study.scheduler->command_for(jobs.back())));
    rank_slots += point.settings.ranks;
  }
  std::cout << study.scheduler->plan(jobs);
  std::cout << fmt::format("total: {} point(s), {} rank-slot(s)\n", study.points.size(), rank_slots);
  std::cout << describe_estimate(estimate, root) << "\n";
  for (const std::string& caution : split_lines(study.scheduler->caution(jobs))) {
    std::cout << "warning: " << caution << "\n";
  }
  std::vector<PointSettings> point_settings;
  for (const Point& point : study.points) point_settings.push_back(point.settings);
  if (const std::string warning = baseline_warning(experiment, point_settings); !warning.empty()) {
    std::cout << "warning: " << warning << "\n";
  }
  if (const std::string warning = unread_settings_warning(experiment, study.points); !warning.empty()) {
    std::cout << "warning: " << warning << "\n";
  }
  return kExitOk;
}

}  // namespace harness
