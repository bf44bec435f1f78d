// Schedulers run jobs: the local one starts `mpirun` on this machine; a cluster's (SLURM, next)
// submits batch jobs. A scheduler renders a job's command (dry runs print it, records keep it),
// submits jobs without waiting for them, reports the ones that have ended, and cancels.
// Chosen by the experiment's "launcher": a name from the table below, or an object with the name
// and that scheduler's options (rows like the settings', with did-you-mean).
//
// Adding a scheduler = a file pair in this folder + a line in scheduler.cpp + a CMake line + a test.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/common/option_table.h"
#include "harness/launch/job.h"
#include "harness/study/experiment.h"
#include "harness/study/validate.h"

namespace harness {

// A job handed to a scheduler: started (id), or not, and why.
struct Submission {
  JobId id = 0;       // 0: not started
  std::string error;  // why not
};

// Told of the jobs of each submission of submit_all (one sbatch: a job, an array or a pack) as
// soon as it is made, before the next: (index in the list, id) of each. The caller remembers them
// (the ledger) so that a harness that dies halfway through leaves no job it submitted unknown. An
// error it throws stops submit_all: jobs that cannot be remembered must not be submitted.
using OnSubmitted = std::function<void(const std::vector<std::pair<std::size_t, JobId>>& submitted)>;

// The jobs that cancel_all could not stop, and the scheduler's words on why.
struct CancelOutcome {
  std::vector<JobId> not_cancelled;
  std::string error;
};

// What a scheduler is told once before a sweep's first job.
struct SweepContext {
  std::string jobs_dir;           // DIR/jobs: where it may keep job scripts and status files
  std::string sweep_id;           // the same for every job ever submitted into this directory
  std::string working_directory;  // where the harness runs: jobs start there
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string_view name() const = 0;
  // Throws LaunchError when this scheduler cannot run here at all (mpirun missing, say), or
  // ConfigError when the experiment asks for what this user cannot have (simulated hosts without
  // root), so that `harness run` stops before the first point.
  virtual void check_available() const = 0;
  // What one job may ask for; validation refuses more before anything runs.
  virtual ResourceLimits limits() const = 0;
  // How many jobs it keeps in flight at once.
  virtual int max_parallel() const = 0;
  // Something to say before `jobs` start (concurrent points sharing a machine, ranks outnumbering
  // cores), one warning per line, or "".
  virtual std::string caution(const std::vector<JobSpec>& /*jobs*/) const { return ""; }
  // The threads each rank of `job` gets.
  virtual int threads_per_rank(const JobSpec& job) const = 0;
  // The exact command that runs `job`, as this scheduler would run it.
  virtual std::vector<std::string> command_for(const JobSpec& job) const = 0;
  // Before the first submit (or adopt) of a sweep. Throws LaunchError.
  virtual void prepare(const SweepContext& /*context*/) {}
  // Starts `job` without waiting for it, its output going to attempt_log_path(job) (the sweep
  // makes that the point's log when the job ends). Throws LaunchError when it cannot be started.
  virtual JobId submit(const JobSpec& job) = 0;
  // Starts several jobs; a scheduler that can group them (job arrays, packed allocations) does.
  // One submission per job, in the order of `jobs` (the default submits one after another);
  // `submitted` (may be empty) hears of each as it starts.
  virtual std::vector<Submission> submit_all(const std::vector<JobSpec>& jobs, const OnSubmitted& submitted);
  // Whether jobs go on when the harness ends (a cluster's): then a run may detach, and a later
  // `harness status` or a resumed run follows the jobs through adopt().
  virtual bool jobs_outlive_harness() const { return false; }
  // The job's id as this scheduler can find it again ("" when it cannot), kept in the results
  // directory's ledger.
  virtual std::string external_id(JobId /*job*/) const { return ""; }
  // Follows a job that an earlier harness submitted (`external_id` and `submitted_at`, wall-clock
  // seconds, from the ledger; 0: not known); nothing when this scheduler cannot.
  virtual std::optional<JobId> adopt(const JobSpec& /*job*/, const std::string& /*external_id*/,
                                     double /*submitted_at*/ = 0) {
    return std::nullopt;
  }
  // Whether a job in flight has been seen ending (or missing) by one query and waits for the next
  // to be judged: a one-shot `harness status` then asks again instead of leaving it in flight.
  virtual bool judging() const { return false; }
  // Where a job in flight is: "running", "queued (Priority)", ...
  virtual std::string describe(JobId /*job*/) const { return "running"; }
  // What a dry run prints beyond each point's command (job scripts, job counts, node-hours), or "".
  virtual std::string plan(const std::vector<JobSpec>& /*jobs*/) { return ""; }
  // The jobs that have ended since the last call, waiting up to `wait_s` for the first (0: do not
  // wait). Jobs over their time limit are stopped and reported as timed out.
  virtual std::vector<JobResult> poll(double wait_s) = 0;
  // Stops a job in flight; poll() reports it as interrupted.
  virtual void cancel(JobId job) = 0;
  // Stops several (a cluster scheduler in one call). The jobs it could not stop go on as before
  // (poll() follows them), so that they stay remembered.
  virtual CancelOutcome cancel_all(const std::vector<JobId>& jobs) {
    for (const JobId job : jobs) cancel(job);
    return {};
  }
};

// An option as --help and schema.json show it.
struct OptionDoc {
  std::string_view key;
  std::string_view expected;
  std::string_view help;
  std::string_view json_schema;
};

template <typename Options>
std::vector<OptionDoc> option_docs(const std::vector<OptionRow<Options>>& rows) {
  std::vector<OptionDoc> docs;
  for (const auto& row : rows) docs.push_back({row.key, row.expected, row.help, row.json_schema});
  return docs;
}

struct SchedulerInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help and the schema
  // Reads the launcher's options (ConfigError naming `spec.where`) and makes the scheduler.
  std::unique_ptr<Scheduler> (*make)(const LauncherSpec& spec);
  std::vector<OptionDoc> (*options)();  // null: it has none
};

// The table, in the order --help lists it; the local scheduler first.
const std::vector<SchedulerInfo>& scheduler_table();

// The JSON Schema of an experiment's "launcher": a scheduler's name, or an object with the name and
// that scheduler's options.
Json launcher_schema(const std::vector<SchedulerInfo>& table = scheduler_table());

// The experiment's launcher, from `table` (scheduler_table() unless a test brings its own).
// Throws ConfigError naming the file and the field for an unknown name or option.
std::unique_ptr<Scheduler> make_scheduler(const LauncherSpec& spec,
                                          const std::vector<SchedulerInfo>& table = scheduler_table());

// Reads `spec.options` with `rows` into `options` (ConfigError "<where>.<key>: ...", with
// did-you-mean for an unknown key).
template <typename Options>
void read_scheduler_options(const LauncherSpec& spec, const std::vector<OptionRow<Options>>& rows,
                            Options& options) {
  for (const auto& [key, value] : spec.options.items()) {
    apply_option(rows, options, key, value, (spec.where.empty() ? "launcher" : spec.where) + "." + key,
                 "option");
  }
}

// CPU cores this process's ranks can use (usable_cpus().cores(): the affinity mask, lowered to a
// cgroup CPU quota), at least 1.
int available_cores();

}  // namespace harness
