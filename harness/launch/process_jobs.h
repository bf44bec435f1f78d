// Jobs that are child processes of the harness, as schedulers that start their jobs on this
// machine keep them (the local scheduler's mpirun; a test's scheduler).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "harness/common/process.h"
#include "harness/launch/job.h"

namespace harness {

class ProcessJobs {
 public:
  // Starts the process. Throws LaunchError when it cannot.
  JobId start(const ProcessRequest& request);
  // Ended jobs since the last call; waits up to `wait_s` for the first.
  std::vector<JobResult> poll(double wait_s);
  void cancel(JobId job);
  std::size_t running() const { return jobs_.size(); }

 private:
  struct Job {
    std::unique_ptr<ChildProcess> process;
    double started_at = 0;
  };
  std::map<JobId, Job> jobs_;
  JobId next_ = 1;
};

}  // namespace harness
