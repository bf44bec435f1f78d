#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/cli/commands.h"
#include "harness/cli/study_loading.h"
#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/launch/job_ledger.h"
#include "harness/launch/sweep_runner.h"
#include "harness/results/report.h"
#include "harness/results/result_set.h"
#include "harness/results/scaling.h"

namespace harness {

// Prints the console table and says where the files went.
void print_reports(const WrittenReports& written, const ResultsDirectory& directory) {
  std::cout << "\n" << written.console << "\nsummary:";
  for (std::size_t i = 0; i < written.tables.size(); ++i) {
    std::cout << (i ? ", " : " ") << written.tables[i];
  }
  std::cout << "\n";
  if (!written.images.empty()) {
    std::cout << "plots:   " << directory.plots_dir() << "/ (";
    for (std::size_t i = 0; i < written.images.size(); ++i) {
      std::cout << (i ? ", " : "") << std::filesystem::path(written.images[i]).filename().string();
    }
    std::cout << ")\n";
  }
  if (!written.html.empty()) std::cout << "report:  " << written.html << "\n";
  if (!written.plots_not_drawn.empty()) {
    std::cout.flush();
    std::cerr << fmt::format("harness: warning: no plots drawn ({}); install gnuplot-nox (bash .ci/install-deps), "
                             "then draw them with: harness plot {}\n",
                             written.plots_not_drawn, directory.path());
  }
  for (const std::string& failure : written.plots_failed) {
    std::cout.flush();
    std::cerr << "harness: warning: plot not drawn: " << failure << "\n";
  }
  if (written.html_failure) std::rethrow_exception(written.html_failure);
}

// A point whose record could not be written is lost from every report: say so last, with where
// its data is.
void say_records_not_written(const SweepOutcome& outcome, std::size_t missing, std::size_t points,
                             const ResultsDirectory& directory) {
  if (outcome.records_not_written == 0) return;
  std::cout.flush();
  std::cerr << fmt::format("harness: {} point record(s) could not be written ({} of {} point(s) have none in {}); "
                           "what their ranks measured stays in {}\n",
                           outcome.records_not_written,
                           std::max(missing, static_cast<std::size_t>(outcome.records_not_written)), points, directory.points_dir(), directory.logs_dir());
}

// A line that must reach the user: on stdout, and on stderr as well when stdout's reader has gone
// (a `| tee` that Ctrl-C ended first).
void say_where_seen(const std::string& line) {
  std::cout << line << "\n";
  if (standard_output_lost()) std::cerr << line << "\n";
}

// Points that this run left without an ok record, whose earlier ok records wait aside.
void say_records_waiting_aside(const SweepOutcome& outcome, const ResultsDirectory& directory) {
  if (outcome.waiting_aside == 0) return;
  say_where_seen(
      fmt::format("harness: {} point(s) have no ok record from this run; their earlier ok records wait "
                  "aside in {} as <id>.json.superseded, out of the reports (a run without --fresh takes "
                  "back those of this harness version and build)",
                  outcome.waiting_aside, directory.points_dir()));
}

// Once stdout's reader has gone (`| head`), the console table went nowhere: say where it is.
void say_if_output_lost(const ResultsDirectory& directory) {
  if (!standard_output_lost()) return;
  std::cerr << fmt::format(
      "harness: warning: standard output could not be written to the end (its reader went away, or its disk is "
      "full); the run went on: its tables are in {} (summary.csv, report.html)\n",
      directory.path());
}

// Says how many points failed, new ones and those --retry-failed kept (which leave the study as
// incomplete: a pipeline must not take it for done); kExitFailure when any did.
int failures_exit(const SweepOutcome& outcome, std::size_t points) {
  int kept_not_ok = 0;
  std::vector<std::string> kept_ends;
  for (const auto& [status, count] : outcome.kept_not_ok) {
    kept_not_ok += count;
    kept_ends.push_back(fmt::format("{} {}", count, status));
  }
  if (outcome.failed == 0 && kept_not_ok == 0) return kExitOk;
  std::cerr << fmt::format("harness: {} of {} point(s) failed{}\n", outcome.failed + kept_not_ok, points,
                           kept_not_ok == 0 ? ""
                                            : fmt::format(" ({} kept from an earlier run by --retry-failed: {})",
                                                          kept_not_ok, fmt::join(kept_ends, ", ")));
  return kExitFailure;
}

int run_command(const RunOptions& options) {
  if (options.dry_run) {
    return plan_command(options.experiment_path, options.out_dir, options.changes, options.detach);
  }
  LoadedStudy study;
  std::unique_ptr<ResultsDirectory> directory;
  std::unique_ptr<DirectoryLock> lock;
  try {
    study = load_study(options.experiment_path, options.changes);
    directory = std::make_unique<ResultsDirectory>(
        options.out_dir.empty() ? default_out_dir(study.experiment.name) : options.out_dir);
    study.scheduler->check_available();
    check_run_target(study, *directory, !options.out_dir.empty(), options.detach);
    directory->check_reusable_for(study.experiment.name);  // the default directory too
    directory->create();
    // One run writes into a directory at a time; the lock goes with the process.
    lock = std::make_unique<DirectoryLock>(*directory, options.command_line);
    // Refused before the directory changes: `harness status` reads the experiment copy to tell
    // which jobs in flight are still the sweep's, and would cancel those a refused run left out.
    refuse_jobs_of_another_launcher(*directory, read_ledger(*directory), study.scheduler->name());
    write_file_atomically(directory->experiment_copy(), study.experiment.source_text);
  } catch (const Error& error) {
    return report_error(error);
  }
  const Experiment& experiment = study.experiment;
  std::cout << fmt::format("harness: experiment \"{}\", {} point(s), results in {}\n",
                           experiment.name, study.points.size(), directory->path());
  std::vector<PointSettings> point_settings;
  for (const Point& point : study.points) point_settings.push_back(point.settings);
  if (const std::string warning = baseline_warning(experiment, point_settings); !warning.empty()) {
    std::cout << "harness: warning: " << warning << "\n";
  }
  if (const std::string warning = unread_settings_warning(experiment, study.points); !warning.empty()) {
    std::cout << "harness: warning: " << warning << "\n";
  }
  if (const std::string warning = build_order_warning(experiment); !warning.empty()) {
    std::cout << "harness: warning: " << warning << "\n";
  }
  install_interrupt_handlers();

  SweepOptions sweep;
  sweep.fresh = options.fresh;
  sweep.retry_failed = options.retry_failed;
  sweep.detach = options.detach;
  sweep.command_line = options.command_line;
  sweep.rank_programs = study.rank_programs;
  sweep.live_progress = isatty(STDOUT_FILENO) != 0;
  SweepOutcome outcome;
  std::size_t missing = 0;
  try {
    outcome = SweepRunner(experiment, study.points, *study.scheduler, *directory, sweep, std::cout).run();
    if (outcome.interrupted) say_where_seen("harness: interrupted; keeping the points completed so far");
    if (options.detach && outcome.in_flight > 0) {
      std::cout << fmt::format("harness: {} point(s) submitted; follow them with: harness status {}\n",
                               outcome.in_flight, directory->path());
      return failures_exit(outcome, study.points.size());
    }
    // Unreadable records were set aside by the runner; none is left to refuse.
    const ResultSet set = ResultSet::load(*directory, experiment, study.points, false);
    missing = set.missing();
    print_reports(write_reports(set, *directory), *directory);
  } catch (const Error& error) {
    say_records_not_written(outcome, missing, study.points.size(), *directory);
    say_records_waiting_aside(outcome, *directory);
    return report_error(error);
  }
  say_records_not_written(outcome, missing, study.points.size(), *directory);
  say_records_waiting_aside(outcome, *directory);
  if (outcome.kept > 0) {
    std::cout << fmt::format("{} point(s) kept from an earlier run (--fresh runs them again)\n",
                             outcome.kept);
  }
  say_if_output_lost(*directory);
  if (outcome.interrupted) return kExitInterrupted;
  return failures_exit(outcome, study.points.size());
}

}  // namespace harness
