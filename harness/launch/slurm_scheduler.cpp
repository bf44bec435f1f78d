#include "harness/launch/slurm_scheduler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/common/text.h"
#include "harness/launch/mpi_dialect.h"
#include "harness/study/sweep.h"

namespace harness {
namespace fs = std::filesystem;
namespace {

// "per-point:1234", "array:1234_5", "pack:1234": what the ledger keeps, and adopt() reads.
std::string encode_id(SlurmMode mode, const std::string& slurm_id) {
  return fmt::format("{}:{}", mode_name(mode), slurm_id);
}

}  // namespace

SlurmScheduler::SlurmScheduler(SlurmOptions options, std::string where)
    : options_(std::move(options)), where_(std::move(where)) {
  template_text_ = load_job_template(options_.template_path, where_ + ".template");
}

SlurmScheduler::SlurmScheduler(SlurmOptions options, std::string where, ClusterConfig cluster, RankStarter starter,
                               MpiFamily family)
    : SlurmScheduler(std::move(options), std::move(where)) {
  config_ = cluster;
  starter_ = starter;
  family_ = family;
}

void SlurmScheduler::check_available() const {
  for (const char* program : {"sbatch", "squeue", "scancel", "scontrol"}) {
    if (find_program(program).empty()) {
      throw LaunchError(fmt::format("{} not found on PATH: the slurm launcher runs where SLURM's client "
                                    "commands are (a login node); for a local cluster see slurm/README.md",
                                    program));
    }
  }
  // A controller that does not answer fails every submission: say so once, before anything.
  if (config(); !config_problem_.empty()) throw LaunchError(config_problem_);
}

int SlurmScheduler::max_parallel() const { return static_cast<int>(kMaxPoints); }

std::string SlurmScheduler::caution(const std::vector<JobSpec>& jobs) const {
  if (options_.overcommit) {
    return "launcher.overcommit is on: nodes may hold more ranks than CPUs, which disturbs every timing";
  }
  const auto over = std::count_if(jobs.begin(), jobs.end(), [this](const JobSpec& job) { return overcommits(job); });
  if (over == 0) return "";
  return fmt::format("{} point(s) put more ranks (times threads) on a node than its {} CPU(s): their jobs "
                     "overcommit the nodes (sbatch --overcommit), which disturbs their timings",
                     over, config().cpus_per_node);
}

SlurmCommands& SlurmScheduler::commands() const {
  if (!commands_) commands_ = std::make_unique<SlurmCommands>(fs::temp_directory_path().string());
  return *commands_;
}

const ClusterConfig& SlurmScheduler::config() const {
  if (config_) return *config_;
  try {
    config_ = commands().read_config(options_.partition);
  } catch (const Error& error) {
    // No cluster answers (a dry run on a laptop): SLURM's defaults. A submission says why it
    // cannot reach the cluster.
    config_ = ClusterConfig{};
    config_problem_ = error.what();
  }
  return *config_;
}

std::string SlurmScheduler::srun_plugin(MpiFamily family) const {
  return options_.srun_mpi.empty() ? std::string(srun_mpi_plugin(family)) : options_.srun_mpi;
}

RankStarter SlurmScheduler::starter() const {
  if (options_.start_ranks_with != RankStarter::kAuto) return options_.start_ranks_with;
  if (!starter_ || *starter_ == RankStarter::kAuto) {
    starter_ = !find_program("srun").empty() && commands().srun_offers_mpi(srun_plugin(family_))
                   ? RankStarter::kSrun
                   : RankStarter::kMpirun;
  }
  return *starter_;
}

void SlurmScheduler::prepare(const SweepContext& context) {
  if (context.jobs_dir.find('\\') != std::string::npos) {
    throw ConfigError(fmt::format("{}: a '\\' in the results directory would turn off the job id in sbatch's "
                                  "--output pattern, so that every job wrote one file: expected a path without '\\'",
                                  context.jobs_dir));
  }
  context_ = context;
  // Every point's end is on the files; ask the scheduler no more often than a finished job stays
  // listed allows.
  backoff_ = QueryBackoff(query_cap_s(config().min_job_age_s));
}

JobId SlurmScheduler::track(const JobSpec& job, SlurmMode mode, const std::string& slurm_id,
                            const std::string& cancel_id) {
  Tracked tracked;
  tracked.spec = job;
  tracked.mode = mode;
  tracked.cancel_id = cancel_id;
  tracked.follow.slurm_id = slurm_id;
  tracked.follow.packed = mode == SlurmMode::kPack;
  tracked.follow.time_limit_s = point_limit_s(job);
  tracked.follow.submitted_at = wall_clock_s();
  tracked.follow.batch_output = context_.jobs_dir + "/batch/" + slurm_id + ".out";
  const JobId id = next_++;
  tracked_.emplace(id, std::move(tracked));
  return id;
}

JobId SlurmScheduler::submit(const JobSpec& job) {
  const Submission submission = submit_all({job}, {}).front();
  if (submission.id == 0) throw LaunchError(submission.error);
  return submission.id;
}

std::string SlurmScheduler::submit_script(const std::string& script_path, const std::string& comment,
                                          SlurmMode mode, const std::string& abandoned_marker) {
  const std::vector<std::string> arguments = {"--chdir=" + context_.working_directory, output_option(mode)};
  try {
    return commands().submit(arguments, script_path);
  } catch (const SbatchTimedOut& timed_out) {
    // The controller may have queued it before sbatch stalled: a second sbatch would run the
    // points twice, both jobs writing the same measurements. And it may queue it after squeue
    // looked: the marker, written first, makes such a job run nothing.
    write_file_atomically(abandoned_marker, std::string(timed_out.what()) + "\n");
    std::string found;
    try {
      found = commands().find_by_comment(job_name(), comment);
    } catch (const LaunchError& error) {
      throw LaunchError(fmt::format("{}, and looking for the job it may have queued failed ({}): not submitted "
                                    "again; a job it queued runs nothing ({})",
                                    timed_out.what(), error.what(), abandoned_marker));
    }
    if (found.empty()) {
      throw LaunchError(fmt::format("{}, and squeue --name={} lists no job of it: not submitted; a job it queues "
                                    "later runs nothing ({})",
                                    timed_out.what(), job_name(), abandoned_marker));
    }
    remove_if_present(abandoned_marker);  // found in time: followed as any other
    return found;
  }
}

std::vector<Submission> SlurmScheduler::submit_all(const std::vector<JobSpec>& jobs, const OnSubmitted& submitted) {
  std::vector<Submission> submissions(jobs.size());
  if (jobs.empty()) return submissions;
  for (const char* folder : {"/scripts", "/status", "/batch"}) {
    std::error_code error;
    fs::create_directories(context_.jobs_dir + folder, error);
    if (error) {
      for (auto& submission : submissions) {
        submission.error = fmt::format("cannot create {}{}: {}", context_.jobs_dir, folder, error.message());
      }
      return submissions;
    }
  }
  for (const Batch& batch : batches(jobs)) {
    // Ctrl-C stops the submitting between two sbatch (each may take up to a minute): the jobs
    // submitted so far are the ones the harness then cancels.
    if (interrupt_requested()) {
      for (const std::size_t i : batch.jobs) submissions[i].error = "not submitted: interrupted";
      continue;
    }
    const JobSpec& first = jobs[batch.jobs.front()];
    const std::string script_path = fmt::format("{}/scripts/{}-{}.sh", context_.jobs_dir, first.name, mode_name(batch.mode));
    std::vector<std::pair<std::size_t, JobId>> made;
    try {
      for (const std::size_t i : batch.jobs) remove_if_present(status_path(jobs[i]));
      remove_if_present(abandoned_marker(batch, jobs));
      write_file_atomically(script_path, render_job_script(template_text_, script_for(batch, jobs)));
      const std::string slurm_id =
          submit_script(script_path, comment_for(batch, jobs), batch.mode, abandoned_marker(batch, jobs));
      for (std::size_t task = 0; task < batch.jobs.size(); ++task) {
        const JobSpec& job = jobs[batch.jobs[task]];
        const std::string id = batch.mode == SlurmMode::kArray ? fmt::format("{}_{}", slurm_id, task) : slurm_id;
        submissions[batch.jobs[task]].id = track(job, batch.mode, id, id);
        made.emplace_back(batch.jobs[task], submissions[batch.jobs[task]].id);
      }
    } catch (const Error& error) {
      for (const std::size_t i : batch.jobs) submissions[i].error = error.what();
    }
    // Remembered (the ledger) before the next sbatch, once per sbatch; outside the try, so that a
    // ledger that cannot be written stops the submitting. A job no ledger names would run with
    // no one to follow or cancel it: this sbatch's jobs are cancelled before the error goes on.
    if (submitted && !made.empty()) {
      try {
        submitted(made);
      } catch (...) {
        std::vector<JobId> ids;
        for (const auto& [index, id] : made) ids.push_back(id);
        cancel_all(ids);
        throw;
      }
    }
  }
  backoff_.reset(wall_clock_s());
  return submissions;
}

std::string SlurmScheduler::external_id(JobId job) const {
  const auto found = tracked_.find(job);
  return found == tracked_.end() ? "" : encode_id(found->second.mode, found->second.follow.slurm_id);
}

std::optional<JobId> SlurmScheduler::adopt(const JobSpec& job, const std::string& external_id, double submitted_at) {
  const auto colon = external_id.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string mode = external_id.substr(0, colon);
  const std::string slurm_id = external_id.substr(colon + 1);
  for (const SlurmMode m : {SlurmMode::kPerPoint, SlurmMode::kArray, SlurmMode::kPack}) {
    if (mode_name(m) == mode && !slurm_id.empty()) {
      const JobId id = track(job, m, slurm_id, slurm_id);
      // sacct is asked for jobs since the earliest submission followed: a job that ended long
      // before this harness adopted it is found with its final state, not judged lost.
      if (submitted_at > 0) tracked_.at(id).follow.submitted_at = std::min(submitted_at, wall_clock_s());
      backoff_ = QueryBackoff(query_cap_s(config().min_job_age_s));  // ask at once
      return id;
    }
  }
  return std::nullopt;
}

bool SlurmScheduler::judging() const {
  return std::any_of(tracked_.begin(), tracked_.end(), [](const auto& entry) {
    const FollowedJob& follow = entry.second.follow;
    return !entry.second.cancelled && (follow.unseen_queries > 0 || follow.silent_queries > 0 || follow.failure_read);
  });
}

std::string SlurmScheduler::describe(JobId job) const {
  const auto found = tracked_.find(job);
  if (found == tracked_.end()) return "unknown";
  const Tracked& tracked = found->second;
  const PointStatusFile status = read_status_file(status_path(tracked.spec));
  if (status.started && !status.finished) {
    return fmt::format("running on {} (job {}, {})", status.host, tracked.follow.slurm_id,
                       format_duration(wall_clock_s() - status.started_at));
  }
  const auto seen = last_seen_.find(tracked.follow.slurm_id);
  if (seen != last_seen_.end() && seen->second.state == "PENDING") {
    return fmt::format("queued (job {}{})", tracked.follow.slurm_id,
                       seen->second.reason.empty() ? "" : ": " + seen->second.reason);
  }
  if (tracked.mode == SlurmMode::kPack && seen != last_seen_.end()) {
    return fmt::format("waiting for its turn in allocation {} ({})", tracked.follow.slurm_id, seen->second.state);
  }
  return fmt::format("submitted (job {})", tracked.follow.slurm_id);
}

void SlurmScheduler::add_jobs_sacct_leaves_out() {
  // sacct lists only jobs eligible to start: not a held one, an array task its throttle holds back
  // or a job whose --begin is still to come, nor one slurmdbd has not heard of yet. Unlisted twice,
  // such a job would be judged lost while it waits in the queue; squeue lists it.
  const bool unlisted = std::any_of(tracked_.begin(), tracked_.end(), [&](const auto& entry) {
    return !entry.second.cancelled && !last_seen_.count(entry.second.follow.slurm_id);
  });
  if (!unlisted) return;
  for (const auto& job : commands().query(job_name(), false, 0)) last_seen_.emplace(job.id, job);
}

std::vector<JobResult> SlurmScheduler::collect(bool may_query) {
  const double now = wall_clock_s();
  bool queried = false;
  const bool following = std::any_of(tracked_.begin(), tracked_.end(), [](const auto& entry) {
    return !entry.second.cancelled;
  });
  if (may_query && following && backoff_.due(now)) {
    double since = now;
    for (const auto& [id, tracked] : tracked_) since = std::min(since, tracked.follow.submitted_at);
    try {
      const auto jobs = commands().query(job_name(), config().accounting, since);
      last_seen_.clear();
      for (const auto& job : jobs) last_seen_[job.id] = job;
      if (config().accounting) add_jobs_sacct_leaves_out();
      queried = true;
    } catch (const LaunchError&) {
      // The controller did not answer: the files still speak; ask again later.
    }
    backoff_.queried(now);
  }
  std::vector<JobResult> ended;
  bool failure_to_confirm = false;  // a pack's point failed: ask the scheduler soon whether it was stopped
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    Tracked& tracked = it->second;
    const PointStatusFile status = read_status_file(status_path(tracked.spec));
    std::optional<JobVerdict> verdict;
    if (tracked.cancelled) {
      // Cancelled by this harness: a point that finished before keeps its result.
      verdict = status.finished && status.exit_code == 0 ? JobVerdict{JobEnd::kCompleted, ""}
                                                         : JobVerdict{JobEnd::kInterrupted, "cancelled by harness"};
    } else {
      const auto seen = last_seen_.find(tracked.follow.slurm_id);
      const bool failure_was_read = tracked.follow.failure_read;
      verdict = judge_job(tracked.follow, status, seen == last_seen_.end() ? nullptr : &seen->second, queried);
      failure_to_confirm |= !failure_was_read && tracked.follow.failure_read;
    }
    if (!verdict) {
      ++it;
      continue;
    }
    JobResult result;
    result.id = it->first;
    result.end = verdict->end;
    result.reason = verdict->reason;
    result.job_id = tracked.follow.slurm_id;
    result.host = status.host;
    result.started_at = status.started ? status.started_at : tracked.follow.submitted_at;
    result.finished_at = point_ended_at(status, tracked.follow, now);
    result.outcome.exited = status.finished;
    result.outcome.exit_code = status.exit_code;
    result.outcome.timed_out = verdict->end == JobEnd::kTimeout;
    result.outcome.interrupted = verdict->end == JobEnd::kInterrupted;
    result.outcome.timeout_s = tracked.follow.time_limit_s;
    result.outcome.wall_time_s = std::max(0.0, result.finished_at - result.started_at);
    ended.push_back(std::move(result));
    it = tracked_.erase(it);
  }
  if (!ended.empty() || failure_to_confirm) backoff_.reset(now);
  return ended;
}

std::vector<JobResult> SlurmScheduler::poll(double wait_s) {
  std::vector<JobResult> ended = collect(true);
  if (!ended.empty() || wait_s <= 0 || tracked_.empty()) return ended;
  // Sleep (a signal wakes it) until the wait is over, checking the files once a second.
  const double until = wall_clock_s() + wait_s;
  while (ended.empty() && !interrupt_requested()) {
    const double left = until - wall_clock_s();
    if (left <= 0) break;
    wait_for_any({}, std::min(1.0, left));
    ended = collect(true);
  }
  return ended;
}

CancelOutcome SlurmScheduler::cancel_all(const std::vector<JobId>& jobs) {
  std::vector<std::string> ids;
  std::vector<JobId> asked;
  for (const JobId job : jobs) {
    const auto found = tracked_.find(job);
    if (found == tracked_.end() || found->second.cancelled) continue;
    asked.push_back(job);
    if (std::find(ids.begin(), ids.end(), found->second.cancel_id) == ids.end()) ids.push_back(found->second.cancel_id);
  }
  const SlurmCommands::CancelFailure failure = commands().cancel(ids);
  CancelOutcome outcome;
  outcome.error = failure.error;
  for (const JobId job : asked) {
    Tracked& tracked = tracked_.at(job);
    // A job scancel could not stop still runs: followed as before, so that it stays in the ledger.
    if (std::find(failure.ids.begin(), failure.ids.end(), tracked.cancel_id) != failure.ids.end()) {
      outcome.not_cancelled.push_back(job);
    } else {
      tracked.cancelled = true;
    }
  }
  return outcome;
}

std::unique_ptr<Scheduler> make_slurm_scheduler(const LauncherSpec& spec) {
  SlurmOptions options;
  read_scheduler_options(spec, slurm_option_rows(), options);
  return std::make_unique<SlurmScheduler>(std::move(options), spec.where.empty() ? "launcher" : spec.where);
}

}  // namespace harness
