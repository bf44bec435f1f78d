#include "harness/launch/slurm_follow.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "harness/common/files.h"

namespace harness {
namespace {

// 128 + N: stopped by signal N (bash's and timeout's convention).
bool is_signal_status(int code) { return code > 128 && code < 128 + 65; }

// The end of a job whose final state the scheduler reported and whose point said nothing more.
JobVerdict from_final_state(const SchedulerJob& seen, bool point_started, const FollowedJob& job) {
  const bool packed = job.packed;
  const std::string& state = seen.state;
  const std::string where = seen.nodes.empty() ? "" : " on " + seen.nodes;
  if (state == "NODE_FAIL" || state == "BOOT_FAIL") {
    return {JobEnd::kNodeFailure, fmt::format("job {} ended {}: a node failed{}", seen.id, state, where)};
  }
  if (state == "PREEMPTED") return {JobEnd::kPreempted, fmt::format("job {} was preempted", seen.id)};
  // A pack that ended before it came to this point: nothing is known of the point itself, and
  // running it again is all there is to do (a cancelled pack's running point is the cancelled one).
  if (packed && !point_started) {
    return {JobEnd::kLost, fmt::format("allocation {} ended ({}) before this point started", seen.id, state)};
  }
  if (state == "CANCELLED") {
    return {JobEnd::kCancelled, fmt::format("job {} was cancelled (scancel, or an administrator)", seen.id)};
  }
  if (state == "OUT_OF_MEMORY") {
    return {JobEnd::kOutOfMemory, fmt::format("job {} ran out of memory{}", seen.id, where)};
  }
  if (state == "TIMEOUT" || state == "DEADLINE") {
    return {JobEnd::kTimeout, fmt::format("job {} reached its SLURM time limit ({})", seen.id, state)};
  }
  // The point's log may not exist: what the job script said (its setup failing) is in the job's output.
  return {JobEnd::kFailed, fmt::format("job {} ended {} and the point wrote no status{}{}", seen.id, state,
                                       point_started ? " after it started" : "",
                                       job.batch_output.empty() ? "" : "; the job's output: " + job.batch_output)};
}

}  // namespace

PointStatusFile parse_status_file(const std::string& text) {
  PointStatusFile status;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string word;
    words >> word;
    if (word == "started") {
      double at = 0;
      if (words >> at) {
        status.started = true;
        status.started_at = at;
        words >> status.host;
      }
    } else if (word == "finished") {
      double at = 0;
      int code = -1;
      // A half-written last line is not a finish.
      if (words >> at >> code) {
        status.finished = true;
        status.finished_at = at;
        status.exit_code = code;
      }
    }
  }
  if (status.finished && !status.started) status.started_at = status.finished_at;
  return status;
}

PointStatusFile read_status_file(const std::string& path) {
  const PlainFile file = open_plain_file(path);  // never through a link planted among the status files
  if (!file) return {};
  char text[4096];
  const std::size_t got = std::fread(text, 1, sizeof(text), file.get());
  return parse_status_file(std::string(text, got));
}

std::optional<JobVerdict> judge_job(FollowedJob& job, const PointStatusFile& status,
                                    const SchedulerJob* seen, bool queried) {
  if (seen != nullptr) job.unseen_queries = 0;
  if (status.finished) {
    const int code = status.exit_code;
    const double elapsed_s = status.finished_at - status.started_at;
    if (code == 0) return JobVerdict{JobEnd::kCompleted, ""};
    // 124: the job script's `timeout` stopped the ranks; 137 when they needed a KILL after it.
    if (code == 124 || (code == 137 && job.time_limit_s > 0 && elapsed_s >= job.time_limit_s)) {
      return JobVerdict{JobEnd::kTimeout, fmt::format("timed out after the {:g} s limit", job.time_limit_s)};
    }
    // A failure or a signal. A job of its own ends with the point, and the scheduler then knows
    // whether a node failed, memory ran out, or scancel, the time limit or a preemption stopped
    // it: wait (two queries at most) for its final state. A pack's allocation goes on with the
    // next point, so the file is all there is. Otherwise the ranks failed on their own, and the
    // record finds which from their log (reason "").
    const JobVerdict ranks_failed{JobEnd::kFailed, ""};
    if (!job.packed && seen != nullptr && is_final_state(seen->state)) {
      JobVerdict verdict = from_final_state(*seen, true, job);
      // FAILED, or COMPLETED when the job script outlived the ranks: the ranks' own failure,
      // which their log names ("" lets the record read it).
      return verdict.end == JobEnd::kFailed ? ranks_failed : verdict;
    }
    if (job.packed) {
      // The allocation goes on with its next point, so a failure is usually the point's own. But
      // when the allocation is being stopped (scancel, its time limit) the point ends too: by a
      // signal, or with srun's own exit code 1 ("Job/step already completing or completed") when
      // the stop came as srun started the step. Only a query made after the failure was read can
      // tell: one made earlier in the same poll may predate the scancel.
      if (!job.failure_read) {
        job.failure_read = true;
        return std::nullopt;
      }
      if (!queried) return std::nullopt;
      if (seen != nullptr && is_final_state(seen->state)) {
        JobVerdict verdict = from_final_state(*seen, true, job);
        return verdict.end == JobEnd::kFailed ? ranks_failed : verdict;
      }
      // Completing: it was stopped, or this was its last point; its final state will say which.
      if (seen != nullptr && seen->state == "COMPLETING") return std::nullopt;
      // Still running: its next point runs, and this one failed on its own.
      if (seen != nullptr || !is_signal_status(code)) return ranks_failed;
    }
    if (!queried) return std::nullopt;
    // The final state will say whose failure it was: a signal's sender, or, for srun's own exit
    // code 1, a scancel that came as it started the step. COMPLETING may last until the scheduler
    // forgets the job (SLURM 22.05 keeps some cancelled jobs COMPLETING until MinJobAge purges them): wait.
    if (seen != nullptr && seen->state == "COMPLETING") return std::nullopt;
    if (seen == nullptr && ++job.unseen_queries >= 2 && is_signal_status(code)) {
      return JobVerdict{JobEnd::kFailed,
                        fmt::format("stopped by signal {} (scancel, a time limit or a preemption), and job {} left "
                                    "the scheduler's list before its final state could be read",
                                    code - 128, job.slurm_id)};
    }
    if (++job.silent_queries >= 2 || job.unseen_queries >= 2) return ranks_failed;
    return std::nullopt;
  }
  if (!queried) return std::nullopt;
  if (seen == nullptr) {
    if (++job.unseen_queries < 2) return std::nullopt;
    return JobVerdict{JobEnd::kLost,
                      fmt::format("job {} vanished from the scheduler without a status file ({})", job.slurm_id,
                                  status.started ? "the point had started on " + status.host
                                                 : "the point had not started")};
  }
  if (!is_final_state(seen->state)) {
    job.silent_queries = 0;
    return std::nullopt;
  }
  if (++job.silent_queries < 2) return std::nullopt;
  return from_final_state(*seen, status.started, job);
}

QueryBackoff::QueryBackoff(double cap_s) : cap_s_(std::max(kFirstIntervalS, cap_s)), random_(std::random_device{}()) {}

void QueryBackoff::reset(double now) {
  interval_s_ = kFirstIntervalS;
  next_at_ = now + interval_s_;
}

void QueryBackoff::queried(double now) {
  // Up to a quarter shorter, so that harnesses started together drift apart, and never above the cap.
  std::uniform_real_distribution<double> jitter(0.75, 1.0);
  next_at_ = now + std::min(cap_s_, interval_s_) * jitter(random_);
  interval_s_ = std::min(cap_s_, interval_s_ * 2);
}

double point_ended_at(const PointStatusFile& status, const FollowedJob& job, double now) {
  if (status.finished) return status.finished_at;
  if (!status.started || job.time_limit_s <= 0) return now;
  return std::min(now, status.started_at + job.time_limit_s + kJobMarginS);
}

double query_cap_s(double min_job_age_s) {
  // Two queries must fall inside the time a finished job stays listed (judge_job waits for two).
  return std::clamp(min_job_age_s / 4, 2.0, 60.0);
}

}  // namespace harness
