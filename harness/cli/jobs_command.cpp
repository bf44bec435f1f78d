// `harness status DIR` and `harness cancel DIR`: the jobs of a results directory that outlive the
// harness that submitted them (a cluster's), found through the directory's ledger.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/cli/study_loading.h"
#include "harness/common/errors.h"
#include "harness/launch/job_ledger.h"
#include "harness/launch/sweep_runner.h"
#include "harness/results/report.h"
#include "harness/results/result_set.h"

namespace harness {
namespace {

// A results directory's experiment, points and the scheduler its jobs were submitted through.
struct DirectoryStudy {
  std::unique_ptr<ResultsDirectory> directory;
  Experiment experiment;
  std::vector<Point> points;
  JobLedger ledger;
  std::unique_ptr<Scheduler> scheduler;
};

DirectoryStudy load_directory(const std::string& results_dir) {
  DirectoryStudy study;
  study.directory = std::make_unique<ResultsDirectory>(results_dir);
  study.experiment = load_stored_experiment(*study.directory);
  study.points = expand(study.experiment);
  study.ledger = read_ledger(*study.directory);
  // The launcher the jobs were submitted with (run --launcher may have chosen another than the
  // experiment's).
  if (study.ledger.launcher.contains("name")) {
    LauncherSpec spec;
    spec.name = study.ledger.launcher["name"].get<std::string>();
    spec.options = study.ledger.launcher;
    spec.options.erase("name");
    spec.where = study.directory->ledger_path() + ": launcher";
    study.experiment.launcher = spec;
  }
  study.scheduler = make_scheduler(study.experiment.launcher);
  return study;
}

// The lock, or nothing (and why, and the holder's line) when a run holds it. Throws ConfigError
// when it cannot be taken for another reason (a link, a file system without locks).
std::unique_ptr<DirectoryLock> try_lock(const ResultsDirectory& directory, const std::vector<std::string>& command_line,
                                        std::string& held_by, std::string* holder = nullptr) {
  try {
    return std::make_unique<DirectoryLock>(directory, command_line);
  } catch (const DirectoryInUse& error) {
    held_by = error.what();
    if (holder != nullptr) *holder = error.holder();
    return nullptr;
  }
}

// Each point's record so far, or its job in flight, without collecting anything: what `status`
// shows of a directory another run is writing (a local run has no jobs, only records), or of one
// it cannot write. Returns status's exit code for what it showed.
int show_records_so_far(const DirectoryStudy& study) {
  std::map<std::string, const StoredRecord*> recorded;
  const std::vector<StoredRecord> stored = read_stored_records(*study.directory);
  for (const StoredRecord& file : stored) recorded[file.path] = &file;
  std::map<std::string, std::string> in_flight;
  for (const auto& entry : study.ledger.entries) in_flight[entry.point_id] = entry.external_id;
  int with_record = 0;
  int ok = 0;
  for (const Point& point : study.points) {
    std::string state = "no record yet";
    if (const auto job = in_flight.find(point.id); job != in_flight.end()) {
      state = fmt::format("in flight (job {})", job->second);
    } else if (const auto file = recorded.find(study.directory->record_path(point.id)); file != recorded.end()) {
      const StoredRecord& found = *file->second;
      state = found.record ? std::string(status_name(found.record->status)) : "unreadable record: " + found.problem;
      ++with_record;
      ok += found.record && found.record->ok() ? 1 : 0;
    }
    std::cout << fmt::format("  [{}/{}] {} {}: {}\n", point.index + 1, study.points.size(), point.id,
                             describe_point(study.experiment, point), state);
  }
  std::cout << fmt::format("{} of {} point(s) recorded so far, {} in flight\n", with_record, study.points.size(),
                           in_flight.size());
  const int total = static_cast<int>(study.points.size());
  return with_record < total || !in_flight.empty() ? kExitInProgress : ok < total ? kExitFailure : kExitOk;
}

}  // namespace

int status_command(const std::string& results_dir, const std::vector<std::string>& command_line) {
  DirectoryStudy study;
  try {
    study = load_directory(results_dir);
  } catch (const Error& error) {
    return report_error(error);
  }
  const ResultsDirectory& directory = *study.directory;
  std::cout << fmt::format("harness: experiment \"{}\" in {}: {} point(s), launcher {}\n", study.experiment.name,
                           directory.path(), study.points.size(), study.scheduler->name());
  std::string held_by;
  std::unique_ptr<DirectoryLock> lock;
  try {
    lock = try_lock(directory, command_line, held_by);
  } catch (const DirectoryNotWritable& error) {
    // A read-only copy of the results (an archive, another machine's mount): show what it holds.
    std::cout << "harness: " << error.what() << "\nharness: showing the records as they are; nothing is collected\n";
    return show_records_so_far(study);
  } catch (const Error& error) {
    return report_error(error);  // not in use, but not lockable either (a link, no locks)
  }
  if (!lock) {
    // A run is following these jobs and writes their records: show, do not collect.
    std::cout << "harness: " << held_by << "\nharness: showing the records so far; that run collects the rest\n";
    show_records_so_far(study);
    return kExitInProgress;
  }
  SweepOptions options;
  options.command_line = command_line;
  // The jobs' records take their builds from the ledger, as they were when submitted.
  options.rank_programs = RankPrograms::unprobed(study.experiment, "");
  SweepOutcome outcome;
  try {
    outcome = SweepRunner(study.experiment, study.points, *study.scheduler, directory, options, std::cout).collect();
  } catch (const Error& error) {
    return report_error(error);
  }
  int done = 0;
  int ok = 0;
  for (const auto& state : outcome.states) {
    std::cout << fmt::format("  [{}/{}] {} {}: {}\n", state.point->index + 1, study.points.size(), state.point->id,
                             describe_point(study.experiment, *state.point), state.state);
    done += state.done ? 1 : 0;
    ok += state.state.rfind("ok", 0) == 0 ? 1 : 0;
  }
  const int total = static_cast<int>(study.points.size());
  std::cout << fmt::format("{} of {} point(s) done ({} ok), {} in flight, {} not submitted\n", done, total, ok,
                           outcome.in_flight, total - done - outcome.in_flight);
  if (done < total) return kExitInProgress;
  try {
    const ResultSet set = ResultSet::load(directory, study.experiment, study.points, false);
    print_reports(write_reports(set, directory), directory);
  } catch (const Error& error) {
    return report_error(error);
  }
  return ok == total ? kExitOk : kExitFailure;
}

int cancel_command(const std::string& results_dir, const std::vector<std::string>& command_line) {
  DirectoryStudy study;
  try {
    study = load_directory(results_dir);
    study.scheduler->check_available();
  } catch (const Error& error) {
    return report_error(error);
  }
  std::string held_by;
  std::string holder;
  std::unique_ptr<DirectoryLock> lock;
  try {
    lock = try_lock(*study.directory, command_line, held_by, &holder);
  } catch (const Error& error) {
    return report_error(error);
  }
  if (study.ledger.entries.empty()) {
    if (!lock) {
      // A local run: its ranks are its own children, which no scheduler can cancel.
      return report_error(ConfigError(fmt::format(
          "cancel: --out {}: in use by another harness run ({}). Its points run as that harness's own processes, "
          "not as jobs a scheduler cancels: stop it with Ctrl-C where it runs, or kill -INT its pid",
          results_dir, holder.empty() ? "its process did not say which" : holder)));
    }
    std::cout << fmt::format("harness: {}: no jobs in flight\n", results_dir);
    return kExitOk;
  }
  try {
    if (!lock) {
      // The run following them records them as cancelled.
      std::vector<JobId> ids;
      for (const auto& entry : study.ledger.entries) {
        JobSpec job;
        job.name = entry.point_id;
        if (const auto id = study.scheduler->adopt(job, entry.external_id)) ids.push_back(*id);
      }
      const CancelOutcome outcome = study.scheduler->cancel_all(ids);
      if (!outcome.not_cancelled.empty()) {
        throw LaunchError(fmt::format("{} of {} job(s) could not be cancelled ({}); they stay in {}",
                                      outcome.not_cancelled.size(), ids.size(), outcome.error,
                                      study.directory->ledger_path()));
      }
      std::cout << fmt::format("harness: cancelled {} job(s); the run following them ({}) records them\n",
                               ids.size(), held_by);
      return kExitOk;
    }
    SweepOptions options;
    options.command_line = command_line;
    options.rank_programs = RankPrograms::unprobed(study.experiment, "");
    const int cancelled = SweepRunner(study.experiment, study.points, *study.scheduler, *study.directory, options,
                                      std::cout)
                              .cancel_in_flight();
    std::cout << fmt::format("harness: cancelled {} job(s); a point without an ok record from this harness runs "
                             "again when the experiment runs into {} again (--fresh: every point)\n",
                             cancelled, results_dir);
  } catch (const Error& error) {
    return report_error(error);
  }
  return kExitOk;
}

}  // namespace harness
