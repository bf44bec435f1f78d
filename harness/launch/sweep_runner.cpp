#include "harness/launch/sweep_runner.h"

#include <filesystem>
#include <map>
#include <ostream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/version.h"
#include "harness/launch/failure_reason.h"
#include "harness/launch/progress.h"
#include "harness/results/provenance.h"
#include "harness/results/report.h"

namespace harness {
namespace fs = std::filesystem;

namespace {

void remove_quietly(const std::string& path) {
  std::error_code ignored;
  fs::remove(path, ignored);
}

// The status of a point whose job did not complete.
PointStatus point_status_of(JobEnd end) {
  switch (end) {
    case JobEnd::kTimeout: return PointStatus::kTimeout;
    case JobEnd::kCancelled: return PointStatus::kCancelled;
    case JobEnd::kOutOfMemory: return PointStatus::kOutOfMemory;
    case JobEnd::kNodeFailure: return PointStatus::kNodeFailure;
    case JobEnd::kPreempted: return PointStatus::kPreempted;
    case JobEnd::kLost: return PointStatus::kLost;
    default: return PointStatus::kFailed;
  }
}

// "<path>: <problem>" read errors name the file first; a message that names it already says so
// once.
std::string without_path(const std::string& problem, const std::string& path) {
  return problem.rfind(path + ": ", 0) == 0 ? problem.substr(path.size() + 2) : problem;
}

}  // namespace

struct SweepRunner::InFlight {
  const Point* point = nullptr;
  JobSpec job;
  std::vector<std::string> command;
  std::string label;
  std::string measurements_path;
};

SweepRunner::SweepRunner(const Experiment& experiment, const std::vector<Point>& points,
                         Scheduler& scheduler, const ResultsDirectory& directory,
                         SweepOptions options, std::ostream& out)
    : experiment_(experiment),
      points_(points),
      scheduler_(scheduler),
      directory_(directory),
      options_(std::move(options)),
      out_(out),
      run_id_(new_run_id()) {}

JobSpec SweepRunner::job_for(const Point& point, const ResultsDirectory& directory,
                             const std::string& rank_program, const std::string& run_id) {
  JobSpec job;
  job.name = point.id;
  job.key = point.key.hash();
  job.ranks = point.settings.ranks;
  job.nodes = point.settings.nodes;
  job.ranks_per_node = point.settings.ranks_per_node;
  job.threads_per_rank = point.settings.threads_per_rank;
  job.time_limit_s = point.settings.timeout_s;
  job.argv = {rank_program, "worker", "--settings", to_json(point.settings).dump(),
              "--output", directory.measurements_path(point.id, run_id)};
  job.log_path = directory.log_path(point.id);
  return job;
}

std::string SweepRunner::label(const Point& point) const {
  return fmt::format("[{}/{}] {} {}", point.index + 1, points_.size(), point.id,
                     describe_point(experiment_, point));
}

void SweepRunner::set_aside_unreadable(const std::vector<StoredRecord>& stored) {
  for (const auto& file : stored) {
    if (file.record) continue;
    const std::string aside = file.path + ".unreadable";
    std::error_code error;
    fs::rename(file.path, aside, error);
    out_ << fmt::format("harness: warning: {} is not a complete record ({}); its point runs again{}\n",
                        file.path, without_path(file.problem, file.path),
                        error ? "" : fmt::format(" (the file is kept as {})", aside));
  }
}

bool SweepRunner::adopt_earlier_record(const Point& point, const std::vector<StoredRecord>& stored) {
  const std::string own_path = directory_.record_path(point.id);
  const StoredRecord* found = nullptr;
  for (const auto& file : stored) {
    // Only complete records of this harness version: another version may measure differently.
    if (!file.record || !file.record->ok() || file.record->provenance.harness_version != kHarnessVersion ||
        PointKey(file.record->settings, file.record->repeat) != point.key) {
      continue;
    }
    if (found == nullptr || file.path == own_path) found = &file;
  }
  if (found == nullptr) return false;
  if (found->path == own_path) return true;
  // The sweep changed and the point moved: its record and log follow it.
  PointRecord record = *found->record;
  const std::string old_id = record.id;
  record.id = point.id;
  record.index = point.index;
  try {
    write_file_atomically(own_path, to_json(record).dump(1));
  } catch (const Error&) {
    return false;  // cannot move it: run the point again
  }
  remove_quietly(found->path);
  std::error_code ignored;
  fs::rename(directory_.log_path(old_id), directory_.log_path(point.id), ignored);
  return true;
}

PointRecord SweepRunner::finish(const InFlight& job, const JobResult& result, std::string& remark) {
  const Point& point = *job.point;
  const ProcessOutcome& outcome = result.outcome;
  PointRecord record;
  record.experiment = experiment_.name;
  record.id = point.id;
  record.index = point.index;
  record.repeat = point.repeat;
  record.key = point.key.hash();
  record.settings = point.settings;
  record.launch.scheduler = std::string(scheduler_.name());
  record.launch.job_id = result.job_id;
  record.launch.command = job.command;
  record.launch.threads_per_rank = scheduler_.threads_per_rank(job.job);
  record.launch.outcome = result.reason.empty() ? outcome.describe() : result.reason;
  record.launch.wall_time_s = outcome.wall_time_s;
  record.provenance = current_provenance(options_.command_line);
  record.provenance.started_at = utc_timestamp(result.started_at);
  record.provenance.finished_at = utc_timestamp(result.finished_at);

  std::string failure;
  if (result.end != JobEnd::kCompleted) {
    record.status = point_status_of(result.end);
    record.log_tail = tail_lines(job.job.log_path, 20);
    failure = result.reason.empty()
                  ? job_failure_reason(outcome, record.log_tail, job.command.empty() ? "job" : job.command[0])
                  : result.reason;
    // What rank 0 had written before the job stopped (a timeout's steps so far), if anything.
    try {
      record.partial_measurements = measurements_from_json(read_json_file(job.measurements_path),
                                                           job.measurements_path);
    } catch (const Error&) {
    }
  } else {
    record.status = PointStatus::kFailed;
    try {
      Measurements measurements = measurements_from_json(read_json_file(job.measurements_path),
                                                         job.measurements_path);
      const KindReport& report = report_for(point.settings.kind);
      failure = measurements.complete ? report.failure(measurements)
                                      : "rank 0's measurements are incomplete although the job ended";
      remark = report.remark(measurements);
      if (measurements.phases) {
        record.timing = point_timing(result.started_at, outcome.wall_time_s, *measurements.phases);
      }
      record.measurements = std::move(measurements);
    } catch (const Error& error) {
      failure = fmt::format("rank 0 left no usable measurements: {}", error.what());
    }
    if (failure.empty()) record.status = PointStatus::kOk;
  }
  remove_quietly(job.measurements_path);
  if (!record.ok()) {
    record.reason = failure;
    if (record.measurements && !record.partial_measurements) {
      record.partial_measurements = std::move(record.measurements);
    }
    record.measurements.reset();
    record.timing.reset();
    if (record.log_tail.empty()) record.log_tail = tail_lines(job.job.log_path, 20);
  }
  return record;
}

SweepOutcome SweepRunner::run() {
  SweepOutcome result;
  const std::vector<StoredRecord> stored = read_stored_records(directory_);
  set_aside_unreadable(stored);
  std::vector<const Point*> to_run;
  std::vector<const Point*> kept;
  for (const auto& point : points_) {
    if (!options_.fresh && adopt_earlier_record(point, stored)) {
      kept.push_back(&point);
    } else {
      to_run.push_back(&point);
    }
  }
  result.kept = static_cast<int>(kept.size());
  if (const std::string caution = scheduler_.caution(); !caution.empty() && !to_run.empty()) {
    out_ << "harness: warning: " << caution << "\n";
  }

  Progress progress(static_cast<int>(to_run.size()), options_.live_progress, scheduler_.max_parallel(), out_);
  for (const Point* point : kept) progress.kept(label(*point), " kept (completed in an earlier run)");

  std::map<JobId, InFlight> in_flight;
  std::size_t next = 0;
  bool cancelled = false;
  while (next < to_run.size() || !in_flight.empty()) {
    while (!interrupt_requested() && next < to_run.size() &&
           static_cast<int>(in_flight.size()) < scheduler_.max_parallel()) {
      InFlight job;
      job.point = to_run[next++];
      job.job = job_for(*job.point, directory_, options_.rank_program, run_id_);
      job.measurements_path = job.job.argv.back();
      job.command = scheduler_.command_for(job.job);
      job.label = label(*job.point);
      // A record or log left by an earlier run must not pass for this one's.
      remove_quietly(directory_.record_path(job.point->id));
      remove_quietly(job.job.log_path);
      remove_quietly(job.measurements_path);
      progress.started(job.label);
      ++result.ran;
      try {
        const JobId id = scheduler_.submit(job.job);
        in_flight.emplace(id, std::move(job));
      } catch (const Error& error) {
        ++result.failed;
        progress.finished(job.label, std::string(" FAILED: ") + error.what(), 0);
      }
    }
    if (interrupt_requested() && !cancelled) {
      for (const auto& [id, job] : in_flight) scheduler_.cancel(id);
      cancelled = true;
    }
    if (in_flight.empty()) break;
    for (const JobResult& ended : scheduler_.poll(1.0)) {
      const auto found = in_flight.find(ended.id);
      if (found == in_flight.end()) continue;
      const InFlight& job = found->second;
      if (ended.end == JobEnd::kInterrupted) {
        // No record: a later run into this directory sees the point as missing and runs it.
        remove_quietly(job.measurements_path);
        progress.finished(job.label, " interrupted (not recorded)", ended.outcome.wall_time_s);
        in_flight.erase(found);
        continue;
      }
      std::string remark;
      std::vector<std::string> details;
      const PointRecord record = finish(job, ended, remark);
      try {
        write_file_atomically(directory_.record_path(record.id), to_json(record).dump(1));
      } catch (const Error& error) {
        details.push_back(fmt::format("    cannot write its record: {}", error.what()));
      }
      std::string outcome_text;
      if (record.ok()) {
        outcome_text = fmt::format(" ok ({}{})", format_duration(ended.outcome.wall_time_s),
                                   remark.empty() ? "" : "; " + remark);
      } else {
        ++result.failed;
        outcome_text = record.status == PointStatus::kFailed
                           ? " FAILED: " + record.reason
                           : fmt::format(" FAILED ({}): {}", status_name(record.status), record.reason);
        details.push_back("    log: " + job.job.log_path);
      }
      progress.finished(job.label, outcome_text, ended.outcome.wall_time_s, details);
      in_flight.erase(found);
    }
  }
  result.interrupted = interrupt_requested();
  return result;
}

}  // namespace harness
