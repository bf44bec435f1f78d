#include "harness/launch/process_jobs.h"

#include "harness/common/clock.h"

namespace harness {

JobEnd job_end_of(const ProcessOutcome& outcome) {
  if (outcome.interrupted) return JobEnd::kInterrupted;
  if (outcome.timed_out) return JobEnd::kTimeout;
  return outcome.ok() ? JobEnd::kCompleted : JobEnd::kFailed;
}

JobId ProcessJobs::start(const ProcessRequest& request) {
  Job job;
  job.started_at = wall_clock_s();
  job.process = std::make_unique<ChildProcess>(request);
  const JobId id = next_++;
  jobs_.emplace(id, std::move(job));
  return id;
}

std::vector<JobResult> ProcessJobs::poll(double wait_s) {
  const auto collect = [this] {
    std::vector<JobResult> ended;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (auto outcome = it->second.process->poll()) {
        JobResult result;
        result.id = it->first;
        result.end = job_end_of(*outcome);
        result.outcome = *outcome;
        result.started_at = it->second.started_at;
        result.finished_at = wall_clock_s();
        ended.push_back(std::move(result));
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    return ended;
  };
  std::vector<JobResult> ended = collect();
  if (!ended.empty() || wait_s <= 0 || jobs_.empty()) return ended;
  std::vector<const ChildProcess*> children;
  for (const auto& [id, job] : jobs_) children.push_back(job.process.get());
  wait_for_any(children, wait_s);
  return collect();
}

void ProcessJobs::cancel(JobId job) {
  const auto found = jobs_.find(job);
  if (found != jobs_.end()) found->second.process->stop();
}

}  // namespace harness
