#include "harness/launch/job_record.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/rank_progress.h"
#include "harness/launch/failure_reason.h"
#include "harness/results/provenance.h"
#include "harness/results/report.h"

namespace harness {

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

PointRecord record_of_ended_job(const std::string& experiment_name, const EndedJob& ended,
                                const std::vector<std::string>& command_line, std::string& remark) {
  const Point& point = *ended.point;
  const JobSpec& job = *ended.job;
  const JobResult& result = *ended.result;
  const ProcessOutcome& outcome = result.outcome;
  PointRecord record;
  record.experiment = experiment_name;
  record.id = point.id;
  record.index = point.index;
  record.repeat = point.repeat;
  record.key = point.key.hash();
  record.settings = point.settings;
  record.launch.scheduler = ended.scheduler;
  record.launch.job_id = result.job_id;
  record.launch.host = result.host;
  record.launch.command = ended.command;
  record.launch.threads_per_rank = ended.threads_per_rank;
  record.launch.outcome = result.reason.empty() ? outcome.describe() : result.reason;
  record.launch.wall_time_s = outcome.wall_time_s;
  record.provenance = current_provenance(command_line);
  record.provenance.started_at = utc_timestamp(result.started_at);
  record.provenance.finished_at = utc_timestamp(result.finished_at);
  record.build = ended.build;

  std::string failure;
  if (result.end != JobEnd::kCompleted) {
    record.status = point_status_of(result.end);
    record.log_tail = tail_lines(job.log_path, 20);
    failure = result.reason.empty() ? job_failure_reason(outcome, record.log_tail, launcher_name(ended.command),
                                                         head_lines(job.log_path, 60), rank_error_lines(job.log_path))
                                    : result.reason;
    // A point that ran out of time may hang: who the others were waiting for, from the ranks' slots.
    if (record.status == PointStatus::kTimeout) {
      const std::string where =
          describe_rank_progress(read_rank_progress(rank_progress_directory(job.measurements_path)), job.ranks,
                                 result.finished_at > 0 ? static_cast<int64_t>(result.finished_at * 1e9)
                                                        : wall_clock_ns());
      if (!where.empty()) {
        failure += "; where the ranks stood: " + where;
      } else if (job.ranks > 0) {
        // Each rank marks its slot as soon as MPI_Init returns: none did.
        failure += fmt::format(
            "; no rank started (none of the {} reached the end of MPI_Init): the launcher did not start "
            "them, or they could not reach each other, as when a host cannot be reached",
            job.ranks);
      }
    }
    // What rank 0 had written before the job stopped (a timeout's steps so far), if anything.
    try {
      record.partial_measurements =
          measurements_from_json(read_json_file(job.measurements_path), job.measurements_path);
    } catch (const Error&) {
    }
  } else {
    record.status = PointStatus::kFailed;
    try {
      Measurements measurements =
          measurements_from_json(read_json_file(job.measurements_path), job.measurements_path);
      const KindReport& report = report_for(point.settings.kind);
      failure = measurements.complete ? report.failure(measurements)
                                      : "rank 0's measurements are incomplete although the job ended";
      remark = report.remark(measurements);
      if (measurements.phases) {
        record.timing = point_timing(result.started_at, outcome.wall_time_s, *measurements.phases);
      }
      if (record.launch.threads_per_rank == 0) record.launch.threads_per_rank = measurements.threads_per_rank;
      record.measurements = std::move(measurements);
    } catch (const Error& error) {
      failure = fmt::format("rank 0 left no usable measurements: {}", error.what());
    }
    if (failure.empty()) record.status = PointStatus::kOk;
  }
  if (!record.ok()) {
    record.reason = failure + full_disk_remark(std::filesystem::path(job.log_path).parent_path().string());
    if (record.measurements && !record.partial_measurements) {
      record.partial_measurements = std::move(record.measurements);
    }
    record.measurements.reset();
    record.timing.reset();
    if (record.log_tail.empty()) record.log_tail = tail_lines(job.log_path, 20);
  }
  return record;
}

}  // namespace harness
