// The SLURM client commands the launcher runs (sbatch, squeue, sacct, scancel, scontrol, srun),
// each as an argv (never through a shell) with a time limit, and their output parsed.
//
// Gentle on the controller: the follow loop asks about the whole sweep in one query (its jobs
// share a name), and the cluster's configuration is read once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/common/errors.h"

namespace harness {

// What the launcher needs to know of the cluster (scontrol show config).
struct ClusterConfig {
  int max_array_size = 1001;     // array indices must be below it
  double min_job_age_s = 300;    // how long a finished job stays visible without accounting
  bool accounting = false;       // sacct works (an accounting storage is configured and answers)
  int cpus_per_node = 0;         // the fewest CPUs of a node of the partition (sinfo); 0: unknown
  double max_time_s = 0;         // the partition's MaxTime (sinfo); 0: unlimited or unknown
};

// A job (or array task) as the scheduler reports it.
struct SchedulerJob {
  std::string id;      // "1234", "1234_5"
  std::string state;   // PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL, ...
  std::string reason;  // why it waits, or "" (squeue's %r; sacct has none)
  std::string nodes;   // where it runs or ran, "" when pending
};

// sbatch gave no answer in time: the controller may have queued the job all the same.
class SbatchTimedOut : public LaunchError {
 public:
  using LaunchError::LaunchError;
};

// How long sbatch may take: HARNESS_SBATCH_TIMEOUT_S (a positive number), or 60 s.
double sbatch_timeout_s();

// States after which a job runs no more.
bool is_final_state(const std::string& state);

class SlurmCommands {
 public:
  // Output of the commands is captured in files under `scratch_dir`.
  explicit SlurmCommands(std::string scratch_dir);

  // scontrol show config; sinfo for the CPUs of `partition`'s nodes ("" = the default one).
  ClusterConfig read_config(const std::string& partition) const;
  // Whether `srun --mpi=list` offers `plugin` (mpi_dialect.h: srun_mpi_plugin).
  bool srun_offers_mpi(std::string_view plugin) const;
  // sbatch --parsable ARGS SCRIPT; the job id. Throws LaunchError with sbatch's own words, or when
  // sbatch queued the job on another cluster ("1234;other", cancelled there), and SbatchTimedOut
  // when sbatch gave no answer within sbatch_timeout_s() (the job may be queued).
  std::string submit(const std::vector<std::string>& arguments, const std::string& script) const;
  // The job of this user named `job_name` whose comment is `comment` (squeue --name), or "" when
  // none is listed. Throws LaunchError when squeue fails.
  std::string find_by_comment(const std::string& job_name, const std::string& comment) const;
  // Every job named `job_name` of this user: squeue --states=all, or sacct with accounting (jobs
  // started since `since`, a Unix time). One scheduler query. Throws LaunchError.
  std::vector<SchedulerJob> query(const std::string& job_name, bool accounting, double since);
  // scancel, all ids in one call; ids already gone are no error. The ids it could not cancel
  // (all of them when scancel gave no answer), with its words, or nothing.
  struct CancelFailure {
    std::vector<std::string> ids;
    std::string error;
  };
  CancelFailure cancel(const std::vector<std::string>& ids) const;

  int queries_made() const { return queries_; }

 private:
  struct Output {
    int exit_code = -1;
    std::string text;
    bool timed_out = false;
  };
  Output run(const std::vector<std::string>& argv, double timeout_s = 60) const;
  [[noreturn]] void throw_queued_elsewhere(const std::string& script, const std::string& id,
                                           const std::string& cluster) const;

  std::string scratch_dir_;
  int queries_ = 0;
};

// Parses `squeue --noheader --array --format=%i|%T|%r|%N` output.
std::vector<SchedulerJob> parse_squeue(const std::string& text);
// Parses `sacct --noheader --parsable2 --format=JobID,State,NodeList` output.
std::vector<SchedulerJob> parse_sacct(const std::string& text);
// Reads `sinfo --noheader --format=%c|%l|%P` output into `config`: the CPUs per node and the
// time limit of `partition`, or of the default one (marked "*") when `partition` is "".
void parse_sinfo(const std::string& text, const std::string& partition, ClusterConfig& config);
// SLURM's time ("30", "30:00", "1:00:00", "2-00:00:00") in seconds; 0 for "UNLIMITED", "infinite"
// or what it cannot read.
double parse_slurm_time_s(const std::string& text);
// Reads the values the launcher uses from `scontrol show config` output.
ClusterConfig parse_config(const std::string& text);

}  // namespace harness
