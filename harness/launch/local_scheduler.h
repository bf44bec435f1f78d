// The default scheduler: one `mpirun -n R` per point, on this machine.
#pragma once

#include <string>
#include <vector>

#include "harness/launch/process_jobs.h"
#include "harness/launch/scheduler.h"

namespace harness {

// "launcher": {"name": "local", ...}
struct LocalOptions {
  // Points run at once. More than one shares the machine's cores between points, which disturbs
  // every measurement; for functional sweeps only.
  int max_parallel = 1;
  std::vector<std::string> mpirun_args;  // before the rank program, e.g. ["--mca", "btl", "self,vader"]
};

const std::vector<OptionRow<LocalOptions>>& local_option_rows();

class LocalScheduler final : public Scheduler {
 public:
  // `cores` and `is_root` are parameters so tests can check the flags for any machine.
  LocalScheduler(LocalOptions options, int cores, bool is_root);
  explicit LocalScheduler(LocalOptions options = {});

  std::string_view name() const override { return "local"; }
  void check_available() const override;
  // Oversubscription lets mpirun start any number of ranks, but past a few per core each rank's
  // LibTorch memory and time slices make the measurement meaningless: 8 per core at most.
  ResourceLimits limits() const override;
  int max_parallel() const override { return options_.max_parallel; }
  std::string caution() const override;
  int threads_per_rank(const JobSpec& job) const override;
  std::vector<std::string> command_for(const JobSpec& job) const override;
  JobId submit(const JobSpec& job) override;
  std::vector<JobResult> poll(double wait_s) override { return jobs_.poll(wait_s); }
  void cancel(JobId job) override { jobs_.cancel(job); }

 private:
  static constexpr int kRanksPerCore = 8;
  LocalOptions options_;
  int cores_;
  bool is_root_;
  ProcessJobs jobs_;
};

std::unique_ptr<Scheduler> make_local_scheduler(const LauncherSpec& spec);

}  // namespace harness
