#include "harness/launch/sweep_runner.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <ostream>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "harness/common/text.h"
#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/version.h"
#include "harness/common/rank_progress.h"
#include "harness/launch/job_record.h"
#include "harness/launch/progress.h"
#include "harness/results/estimate.h"

namespace harness {
namespace fs = std::filesystem;

SweepRunner::SweepRunner(const Experiment& experiment, const std::vector<Point>& points,
                         Scheduler& scheduler, const ResultsDirectory& directory,
                         SweepOptions options, std::ostream& out)
    : experiment_(experiment),
      points_(points),
      scheduler_(scheduler),
      directory_(directory),
      options_(std::move(options)),
      out_(out),
      run_id_(new_run_id()) {
  // Jobs may run elsewhere (cluster nodes start in the harness's directory, but `harness status`
  // may run from another): every path a job or the ledger holds is absolute.
  std::error_code error;
  const fs::path absolute = fs::absolute(directory.path(), error);
  if (!error) directory_ = ResultsDirectory(absolute.lexically_normal().string());
}

JobSpec SweepRunner::job_for(const Point& point, const ResultsDirectory& directory,
                             const RankPrograms& rank_programs, const std::string& run_id) {
  JobSpec job;
  job.name = point.id;
  job.key = point.key.hash();
  job.ranks = point.settings.ranks;
  job.nodes = point.settings.nodes;
  job.ranks_per_node = point.settings.ranks_per_node;
  job.threads_per_rank = point.settings.threads_per_rank;
  if (point.settings.device == "cuda") {
    // The most ranks one node holds: ranks_per_node, or as SLURM spreads them (3 on 2 nodes: 2).
    const int nodes = std::max(1, point.settings.nodes);
    job.gpus_per_node = point.settings.ranks_per_node > 0 ? point.settings.ranks_per_node
                                                          : (point.settings.ranks + nodes - 1) / nodes;
  }
  job.time_limit_s = point.settings.timeout_s;
  job.argv = {rank_programs.path_for(point.settings), "worker", "--settings",
              rank_programs.worker_settings_for(point.settings).dump(),
              "--output", directory.measurements_path(point.id, run_id)};
  if (const auto mpi = rank_programs.mpi_for(point.settings)) std::tie(job.mpi_family, job.mpi_launcher) = *mpi;
  job.log_path = directory.log_path(point.id);
  job.measurements_path = job.argv.back();
  job.attempt = run_id;
  if (point.settings.timeline) {
    job.argv.push_back("--timeline");
    job.argv.push_back(directory.timeline_path(point.id, run_id));
  }
  return job;
}

std::string SweepRunner::label(const Point& point) const {
  return fmt::format("[{}/{}] {} {}", point.index + 1, points_.size(), point.id,
                     describe_point(experiment_, point));
}

bool SweepRunner::record_ended(const JobResult& ended, Progress& progress) {
  const auto found = in_flight_.find(ended.id);
  if (found == in_flight_.end()) return false;
  not_cancelled_.erase(ended.id);
  const InFlight& job = found->second;
  // The ranks' progress slots serve the record's reason only (job_record.cpp).
  std::error_code ignored;
  const auto remove_progress = [&] { fs::remove_all(rank_progress_directory(job.job.measurements_path), ignored); };
  if (ended.end == JobEnd::kInterrupted) {
    // No new record (an earlier one, set aside with its log when the job was submitted, waits
    // there): a later run decides on that as on any.
    remove_if_present(job.job.measurements_path);
    drop_job_files(job);
    remove_progress();
    progress.finished(job.label, " interrupted (not recorded)", ended.outcome.wall_time_s);
    in_flight_.erase(found);
    return false;
  }
  // Only an ok record replaces an earlier one; anything less leaves it aside (a rename: it works
  // on a full disk too).
  set_aside_own_record(*job.point);
  take_up_job_files(job);
  std::string remark;
  std::vector<std::string> details;
  const PointRecord record = record_of_ended_job(
      experiment_.name,
      {job.point, &job.job, job.command, std::string(scheduler_.name()), scheduler_.threads_per_rank(job.job), &ended,
       job.build},
      options_.command_line, remark);
  remove_progress();
  std::string outcome_text;
  bool written = true;
  try {
    write_file_atomically(directory_.record_path(record.id), to_json(record).dump(1));
    if (record.ok()) remove_superseded_of(*job.point);
    // Its measurements go once the ledger no longer names the job (settle_measurements).
    settled_.insert(job.point->id);
  } catch (const Error& error) {
    // A point without a record is lost, whatever its job did: it fails, and its data stays. Its
    // earlier record waits aside, where neither this run's report nor a later run takes it for
    // this run's result.
    written = false;
    ++records_not_written_;
    // Where rank 0 could not write its measurements either (the same full or read-only disk),
    // there are none to point to.
    std::error_code missing;
    outcome_text =
        fs::exists(job.job.measurements_path, missing)
            ? fmt::format(" FAILED: its record cannot be written ({}); rank 0's measurements stay in {}", error.what(),
                          job.job.measurements_path)
            : fmt::format(" FAILED: its record cannot be written ({}), and rank 0 wrote no measurements (its log "
                          "says why: {})",
                          error.what(), job.job.log_path);
  }
  if (written && record.ok()) {
    outcome_text = fmt::format(" ok ({}{})", format_duration(ended.outcome.wall_time_s),
                               remark.empty() ? "" : "; " + remark);
  } else if (written) {
    outcome_text = record.status == PointStatus::kFailed
                       ? " FAILED: " + record.reason
                       : fmt::format(" FAILED ({}): {}", status_name(record.status), record.reason);
    details.push_back("    log: " + job.job.log_path);
  }
  progress.finished(job.label, outcome_text, ended.outcome.wall_time_s, details);
  in_flight_.erase(found);
  return !written || !record.ok();
}

std::map<const Point*, double> SweepRunner::earlier_durations_s() const {
  std::map<const Point*, double> earlier_s;
  const SweepEstimate estimate = estimate_sweep(points_, "results/" + experiment_.name);
  for (std::size_t i = 0; i < points_.size(); ++i) earlier_s[&points_[i]] = estimate.earlier_s[i];
  return earlier_s;
}

std::vector<const Point*> SweepRunner::points_to_submit(const std::vector<const Point*>& without_record) const {
  std::vector<const Point*> to_run;
  for (const Point* point : without_record) {
    const bool followed = std::any_of(in_flight_.begin(), in_flight_.end(),
                                      [&](const auto& entry) { return entry.second.point == point; });
    if (!followed) to_run.push_back(point);
  }
  return to_run;
}

void SweepRunner::report_kept_and_adopted(const std::map<const Point*, PointStatus>& kept,
                                          Progress& progress) const {
  for (const auto& [point, status] : kept) {
    progress.kept(label(*point), status == PointStatus::kOk
                                     ? " kept (completed in an earlier run)"
                                     : fmt::format(" kept ({} in an earlier run; --retry-failed keeps it)",
                                                   status_name(status)));
  }
  for (const auto& [id, job] : in_flight_) {
    progress.started(job.label + fmt::format(" (submitted earlier: {})", scheduler_.describe(id)));
  }
}

// Submits to_run[next...] up to max_parallel jobs in flight, advancing `next`.
void SweepRunner::submit_next_batch(const std::vector<const Point*>& to_run, std::size_t& next,
                                    const std::map<const Point*, double>& earlier_s, Progress& progress,
                                    SweepOutcome& result) {
  std::vector<InFlight> batch;
  std::vector<JobSpec> specs;
  while (next < to_run.size() && static_cast<int>(in_flight_.size() + batch.size()) < scheduler_.max_parallel()) {
    InFlight job;
    job.point = to_run[next++];
    job.job = job_for(*job.point, directory_, options_.rank_programs, run_id_);
    const auto earlier = earlier_s.find(job.point);
    job.job.expected_s = earlier != earlier_s.end() ? earlier->second : 0;
    job.command = scheduler_.command_for(job.job);
    job.label = label(*job.point);
    job.build = options_.rank_programs.provenance_for(job.point->settings);
    // An earlier run's record and log stay until this one's replace them (a refused or
    // interrupted submission must not lose them): the job writes its own log.
    remove_if_present(attempt_log_path(job.job));
    remove_if_present(job.job.measurements_path);
    specs.push_back(job.job);
    batch.push_back(std::move(job));
  }
  // Each job enters the ledger as it is submitted, before the next sbatch: a harness killed
  // halfway through leaves none of its jobs unknown.
  const auto remember = [&](std::size_t i, JobId id) {
    if (id == 0 || in_flight_.count(id) != 0) return;
    batch[i].submitted_at = wall_clock_s();
    in_flight_.emplace(id, batch[i]);
  };
  const std::vector<Submission> submissions =
      scheduler_.submit_all(specs, [&](const std::vector<std::pair<std::size_t, JobId>>& submitted) {
        for (const auto& [i, id] : submitted) remember(i, id);
        save_ledger();
      });
  for (std::size_t i = 0; i < batch.size(); ++i) {
    // Ctrl-C stopped the submitting: not run, as the points not yet taken up.
    if (submissions[i].id == 0 && interrupt_requested()) continue;
    ++result.ran;
    if (submissions[i].id != 0) {
      progress.started(batch[i].label);
      remember(i, submissions[i].id);
    } else {
      // Refused (sbatch's reason): one line, with no "submitted" before it.
      ++result.failed;
      progress.finished(batch[i].label, " FAILED: " + submissions[i].error, 0);
    }
  }
  save_ledger();
}

SweepOutcome SweepRunner::loop(Submit submit, bool follow) {
  SweepOutcome result;
  const Triage triage = triage_points(submit, result);
  adopt_ledger_jobs(triage.without_record);
  settle_measurements();
  std::vector<const Point*> to_run;
  // How long each point took before (results/<name>/ under the working directory), for a
  // scheduler that groups short points (SLURM's auto mode).
  std::map<const Point*, double> earlier_s;
  if (submit == Submit::kAll && scheduler_.jobs_outlive_harness()) earlier_s = earlier_durations_s();
  if (submit == Submit::kAll) {
    to_run = points_to_submit(triage.without_record);
    // Before any job: a refused or interrupted submission must not leave them to pass for this
    // run's, nor a point that Ctrl-C kept from being submitted.
    set_aside_records_of(to_run, triage.stored);
  }
  if (!to_run.empty()) {
    std::vector<JobSpec> jobs;
    for (const Point* point : to_run) jobs.push_back(job_for(*point, directory_, options_.rank_programs, run_id_));
    for (const std::string& caution : split_lines(scheduler_.caution(jobs))) {
      out_ << "harness: warning: " << caution << "\n";
    }
  }

  Progress progress(static_cast<int>(to_run.size() + in_flight_.size()), options_.live_progress && follow,
                    scheduler_.max_parallel(), out_, scheduler_.jobs_outlive_harness());
  if (submit == Submit::kAll) report_kept_and_adopted(triage.kept, progress);

  std::size_t next = 0;
  bool cancelled = false;
  while (true) {
    if (next < to_run.size() && !interrupt_requested() &&
        static_cast<int>(in_flight_.size()) < scheduler_.max_parallel()) {
      submit_next_batch(to_run, next, earlier_s, progress, result);
      continue;  // fill up to max_parallel before waiting
    }
    if (interrupt_requested() && !cancelled) {
      cancel_all_in_flight();
      cancelled = true;
    }
    // Jobs that could not be cancelled run on, in the ledger: a later run or `harness cancel` finds them.
    if (in_flight_.size() == not_cancelled_.size() || (options_.detach && submit == Submit::kAll)) break;
    for (const JobResult& ended : scheduler_.poll(follow ? 1.0 : 0.0)) {
      if (record_ended(ended, progress)) ++result.failed;
    }
    save_ledger();
    settle_measurements();
    if (!follow) break;
  }
  result.in_flight = static_cast<int>(in_flight_.size());
  result.records_not_written = records_not_written_;
  result.waiting_aside = points_waiting_aside(triage);
  result.interrupted = interrupt_requested();
  return result;
}

SweepOutcome SweepRunner::run() { return loop(Submit::kAll, !options_.detach); }

}  // namespace harness
