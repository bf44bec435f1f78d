// The SLURM launcher: "launcher": "slurm", or {"name": "slurm", <options>} (slurm_options.h).
//
// Jobs are batch scripts rendered from a template (slurm_script.h) and submitted with sbatch,
// grouped by mode: a job per point, a job array per group of points with the same resources
// (split at the cluster's MaxArraySize), or a pack: one allocation per group that runs its points
// one after another as job steps. Inside a job, srun (--mpi=pmix for Open MPI, pmi2 for MPICH)
// or the MPI's own launcher starts the ranks.
//
// Following is gentle: a point's end is read from its status file (slurm_follow.h); the
// scheduler is asked about the whole sweep at once (its jobs share the name harness-<sweep id>),
// with back-off, only to find jobs that died without a word. Jobs outlive the harness: the
// results directory's ledger keeps their ids, and a later `harness status` or resumed run adopts
// them.
//
// slurm_scheduler.cpp submits, follows and cancels; slurm_jobs.cpp turns points into jobs
// (batches, scripts, the command inside a job, the dry run's plan).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/mpi_dialect.h"
#include "harness/launch/scheduler.h"
#include "harness/launch/slurm_commands.h"
#include "harness/launch/slurm_follow.h"
#include "harness/launch/slurm_options.h"
#include "harness/launch/slurm_script.h"

namespace harness {

class SlurmScheduler final : public Scheduler {
 public:
  // `where` names the launcher in messages ("exp.json: launcher").
  SlurmScheduler(SlurmOptions options, std::string where);
  // For tests: a cluster of this configuration whose jobs start ranks with `starter`, asked
  // nothing until a job is submitted, for a build against `family`'s MPI.
  SlurmScheduler(SlurmOptions options, std::string where, ClusterConfig cluster, RankStarter starter,
                 MpiFamily family = MpiFamily::kOpenMpi);

  std::string_view name() const override { return "slurm"; }
  void check_available() const override;
  ResourceLimits limits() const override { return {}; }
  int max_parallel() const override;
  std::string caution(const std::vector<JobSpec>& jobs) const override;
  int threads_per_rank(const JobSpec& job) const override { return job.threads_per_rank; }
  std::vector<std::string> command_for(const JobSpec& job) const override;
  void prepare(const SweepContext& context) override;
  JobId submit(const JobSpec& job) override;
  std::vector<Submission> submit_all(const std::vector<JobSpec>& jobs, const OnSubmitted& submitted) override;
  bool jobs_outlive_harness() const override { return true; }
  std::string external_id(JobId job) const override;
  std::optional<JobId> adopt(const JobSpec& job, const std::string& external_id, double submitted_at = 0) override;
  bool judging() const override;
  std::string describe(JobId job) const override;
  std::string plan(const std::vector<JobSpec>& jobs) override;
  std::vector<JobResult> poll(double wait_s) override;
  void cancel(JobId job) override { cancel_all({job}); }
  CancelOutcome cancel_all(const std::vector<JobId>& jobs) override;

  int queries_made() const { return commands_ ? commands_->queries_made() : 0; }

 private:
  struct Tracked {
    JobSpec spec;
    FollowedJob follow;
    SlurmMode mode = SlurmMode::kPerPoint;
    std::string cancel_id;  // what scancel takes: the job, the array task, the pack's allocation
    bool cancelled = false;  // by this harness: ends as interrupted
  };
  // Jobs rendered into one script and submitted with one sbatch.
  struct Batch {
    SlurmMode mode = SlurmMode::kPerPoint;
    std::vector<std::size_t> jobs;  // indices into the submitted list
  };

  SlurmCommands& commands() const;
  // With accounting: adds to last_seen_ what squeue lists of the jobs followed that sacct did not.
  void add_jobs_sacct_leaves_out();
  // The cluster's configuration, read once; SLURM's defaults when no cluster answers.
  const ClusterConfig& config() const;
  // More ranks (times threads) on a node than it has CPUs: sbatch --overcommit.
  bool overcommits(const JobSpec& job) const;
  // What `job` asks SLURM for (sbatch --gpus-per-node): the launcher's gpus_per_node when set,
  // else what the point needs (JobSpec::gpus_per_node); 0: none.
  int gpus_per_node(const JobSpec& job) const;
  // The plan's words on a batch's GPUs: how many, and which one each rank uses; "" without.
  std::string gpu_note(const Batch& batch, const std::vector<JobSpec>& jobs) const;
  RankStarter starter() const;
  // What srun --mpi= starts ranks of `family` with: the launcher's srun_mpi, else the family's.
  std::string srun_plugin(MpiFamily family) const;
  double point_limit_s(const JobSpec& job) const;
  // The most one job may ask for: max_time_per_job_s, the partition's MaxTime, 365 days.
  double max_job_time_s() const;
  std::vector<Batch> batches(const std::vector<JobSpec>& jobs) const;
  JobScript script_for(const Batch& batch, const std::vector<JobSpec>& jobs) const;
  // "<attempt>:<key>,<key>...": which points the job runs, in which attempt.
  static std::string comment_for(const Batch& batch, const std::vector<JobSpec>& jobs);
  std::string job_name() const { return "harness-" + context_.sweep_id; }
  // What names a point's status file in its job script: "<point id>.<attempt>".
  static std::string status_stem(const JobSpec& job);
  std::string status_path(const JobSpec& job) const;
  double requested_node_hours(const Batch& batch, const std::vector<JobSpec>& jobs) const;
  // sbatch's --output: DIR/jobs/batch/<job id>.out, an array task's "<array id>_<task>.out", so
  // that a followed job's output is named by the id squeue gives it.
  std::string output_option(SlurmMode mode) const;
  JobId track(const JobSpec& job, SlurmMode mode, const std::string& slurm_id, const std::string& cancel_id);
  // sbatch of `script_path`; when sbatch gives no answer in time, the job it may have queued all
  // the same, found by its comment (never submitted twice). Throws LaunchError, leaving the file
  // `abandoned_marker` behind when no job was found: one queued later runs nothing.
  std::string submit_script(const std::string& script_path, const std::string& comment, SlurmMode mode,
                            const std::string& abandoned_marker);
  // The file whose presence tells a batch's job that its sbatch was given up on (JobScript).
  std::string abandoned_marker(const Batch& batch, const std::vector<JobSpec>& jobs) const;
  std::vector<JobResult> collect(bool may_query);

  SlurmOptions options_;
  std::string where_;
  std::string template_text_;
  SweepContext context_;
  mutable std::unique_ptr<SlurmCommands> commands_;
  mutable std::optional<ClusterConfig> config_;
  mutable std::string config_problem_;  // why no configuration could be read
  mutable std::optional<RankStarter> starter_;
  MpiFamily family_ = build_mpi_family();  // of the running harness; a named build's points say theirs
  std::map<JobId, Tracked> tracked_;
  std::map<std::string, SchedulerJob> last_seen_;  // the last query's answer, by job id
  QueryBackoff backoff_{60};
  JobId next_ = 1;
};

std::unique_ptr<Scheduler> make_slurm_scheduler(const LauncherSpec& spec);

}  // namespace harness
