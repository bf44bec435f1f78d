// The SLURM launcher's side that turns points into jobs: which points share a job (batches), the
// job scripts with their #SBATCH lines, the command that starts a point's ranks inside its job, and
// the dry run's account of all of it (slurm_scheduler.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/text.h"
#include "harness/launch/slurm_scheduler.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

// What a pack asks SLURM for beyond each point's limit (and beyond them all, kJobMarginS).
constexpr double kPackStepMarginS = 30;
// A point without a limit of its own or the launcher's.
constexpr double kDefaultPointLimitS = 3600;

// In 64 bits: a limit near the bound (365 days), or a pack of many, overflows no int on the way.
int64_t minutes_for(double seconds) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::min(seconds, 4 * kMaxTimeLimitS) / 60)));
}

int ranks_on_node(const JobSpec& job) {
  if (job.ranks_per_node > 0) return job.ranks_per_node;
  return (job.ranks + job.nodes - 1) / std::max(1, job.nodes);
}

}  // namespace

bool SlurmScheduler::overcommits(const JobSpec& job) const {
  if (options_.overcommit) return true;
  const int cpus = config().cpus_per_node;
  return cpus > 0 && ranks_on_node(job) * std::max(1, job.threads_per_rank) > cpus;
}

int SlurmScheduler::gpus_per_node(const JobSpec& job) const {
  return options_.gpus_per_node > 0 ? options_.gpus_per_node : job.gpus_per_node;
}

std::string SlurmScheduler::gpu_note(const Batch& batch, const std::vector<JobSpec>& jobs) const {
  const JobSpec& first = jobs[batch.jobs.front()];
  const int gpus = gpus_per_node(first);
  if (gpus == 0) return "";
  const std::string asked = options_.gpus_per_node > 0 ? "launcher gpus_per_node" : "one per rank on a node";
  // Points of a batch share their device (gpus_per_node is part of the batch's shape), unless
  // the launcher's option puts cpu and cuda points in one.
  if (std::none_of(batch.jobs.begin(), batch.jobs.end(), [&](std::size_t i) { return jobs[i].gpus_per_node > 0; })) {
    return fmt::format("; {} GPU(s) per node ({}), unused: the points run on the cpu", gpus, asked);
  }
  int most_ranks = 0;
  for (const std::size_t i : batch.jobs) most_ranks = std::max(most_ranks, ranks_on_node(jobs[i]));
  return fmt::format("; {} GPU(s) per node ({}): a rank uses GPU (its local rank mod {}){}", gpus, asked, gpus,
                     most_ranks > gpus ? fmt::format(", so up to {} ranks share one", (most_ranks + gpus - 1) / gpus)
                                       : "");
}

std::string SlurmScheduler::status_stem(const JobSpec& job) {
  return job.attempt.empty() ? job.name : job.name + "." + job.attempt;
}

std::string SlurmScheduler::status_path(const JobSpec& job) const {
  return context_.jobs_dir + "/status/" + status_stem(job) + ".status";
}

double SlurmScheduler::max_job_time_s() const {
  double most_s = kMaxTimeLimitS;
  if (options_.max_time_per_job_s > 0) most_s = std::min(most_s, options_.max_time_per_job_s);
  if (config().max_time_s > 0) most_s = std::min(most_s, config().max_time_s);
  return most_s;
}

double SlurmScheduler::point_limit_s(const JobSpec& job) const {
  if (options_.time_limit_s > 0) return options_.time_limit_s;
  return job.time_limit_s > 0 ? job.time_limit_s : kDefaultPointLimitS;
}

std::vector<std::string> SlurmScheduler::command_for(const JobSpec& job) const {
  std::vector<std::string> command;
  if (!job.environment.empty()) {
    command.emplace_back("env");
    for (const auto& [key, value] : job.environment) command.push_back(key + "=" + value);
  }
  // A named build of another MPI (a two-build sweep) starts its ranks as its MPI needs.
  const MpiFamily family = mpi_family_named(job.mpi_family).value_or(family_);
  if (starter() == RankStarter::kSrun) {
    command.insert(command.end(), {"srun", fmt::format("--mpi={}", srun_plugin(family)),
                                   fmt::format("--nodes={}", job.nodes), fmt::format("--ntasks={}", job.ranks)});
    if (job.ranks_per_node > 0) command.push_back(fmt::format("--ntasks-per-node={}", job.ranks_per_node));
    if (job.threads_per_rank > 0) command.push_back(fmt::format("--cpus-per-task={}", job.threads_per_rank));
    if (overcommits(job)) command.emplace_back("--overcommit");
    // One rank failing ends the step instead of leaving the others waiting in a collective.
    command.emplace_back("--kill-on-bad-exit=1");
  } else if (family == MpiFamily::kMpich) {
    // Hydra finds the allocation's nodes and starts its proxies with srun (its SLURM bootstrap),
    // and passes its whole environment on to every rank. Its name, as configure found it:
    // Debian's plain mpiexec is Open MPI's where both are installed.
    const std::string launcher =
        !job.mpi_launcher.empty() ? job.mpi_launcher : (build_mpi_family() == family ? build_launcher() : "");
    command.insert(command.end(),
                   {launcher.empty() ? usual_launcher(family) : launcher, "-n", std::to_string(job.ranks)});
    if (job.ranks_per_node > 0) command.insert(command.end(), {"-ppn", std::to_string(job.ranks_per_node)});
    command.insert(command.end(), {"-bind-to", "none"});
  } else {
    command.insert(command.end(), {"mpirun", "-n", std::to_string(job.ranks)});
    if (job.ranks_per_node > 0) {
      command.insert(command.end(), {"--map-by", fmt::format("ppr:{}:node", job.ranks_per_node)});
    }
    if (overcommits(job)) command.emplace_back("--oversubscribe");
    command.insert(command.end(), {"--bind-to", "none"});
    // The job script sets these; mpirun forwards only what it is told to other nodes.
    for (const char* variable :
         {"HARNESS_THREADS_PER_RANK", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) {
      command.insert(command.end(), {"-x", variable});
    }
    for (const auto& [key, value] : job.environment) command.insert(command.end(), {"-x", key});
  }
  command.insert(command.end(), job.argv.begin(), job.argv.end());
  return command;
}

std::vector<SlurmScheduler::Batch> SlurmScheduler::batches(const std::vector<JobSpec>& jobs) const {
  // Points that can share an allocation: the same nodes and layout, threads and GPUs. Arrays also
  // need the same time limit (every task of an array asks for the same).
  const auto shape = [this](const JobSpec& job) {
    return fmt::format("{}/{}/{}/{}", job.nodes, job.ranks_per_node, job.threads_per_rank, gpus_per_node(job));
  };
  std::vector<std::pair<std::string, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::string key = shape(jobs[i]);
    auto found = std::find_if(groups.begin(), groups.end(), [&](const auto& group) { return group.first == key; });
    if (found == groups.end()) {
      groups.push_back({key, {}});
      found = groups.end() - 1;
    }
    found->second.push_back(i);
  }
  std::vector<Batch> result;
  for (const auto& [key, members] : groups) {
    SlurmMode mode = options_.mode;
    if (mode == SlurmMode::kAuto) {
      // Short points: a pack, because a job per point would wait in the queue longer than it runs.
      const bool all_short = std::all_of(members.begin(), members.end(), [&](std::size_t i) {
        const double expected = jobs[i].expected_s > 0 ? jobs[i].expected_s : point_limit_s(jobs[i]);
        return expected < kPackBelowSeconds;
      });
      mode = all_short ? SlurmMode::kPack : SlurmMode::kArray;
    }
    if (mode == SlurmMode::kPack) {
      // Split where the next point would make the allocation ask for more than one job may.
      const double most_s = max_job_time_s();
      Batch pack{SlurmMode::kPack, {}};
      double pack_s = kJobMarginS;
      for (const std::size_t i : members) {
        const double step_s = point_limit_s(jobs[i]) + kPackStepMarginS;
        if (!pack.jobs.empty() && pack_s + step_s > most_s) {
          result.push_back(std::move(pack));
          pack = {SlurmMode::kPack, {}};
          pack_s = kJobMarginS;
        }
        pack.jobs.push_back(i);
        pack_s += step_s;
      }
      result.push_back(std::move(pack));
      continue;
    }
    if (mode == SlurmMode::kPerPoint || members.size() == 1) {
      for (const std::size_t i : members) result.push_back({SlurmMode::kPerPoint, {i}});
      continue;
    }
    // Arrays: one per (ranks, time) within the group, split at the cluster's MaxArraySize.
    std::vector<std::pair<std::string, std::vector<std::size_t>>> arrays;
    for (const std::size_t i : members) {
      const std::string array_key = fmt::format("{}/{}", jobs[i].ranks, minutes_for(point_limit_s(jobs[i]) + kJobMarginS));
      auto found = std::find_if(arrays.begin(), arrays.end(), [&](const auto& a) { return a.first == array_key; });
      if (found == arrays.end()) {
        arrays.push_back({array_key, {}});
        found = arrays.end() - 1;
      }
      found->second.push_back(i);
    }
    const auto largest = static_cast<std::size_t>(std::max(1, config().max_array_size));
    for (const auto& [array_key, indices] : arrays) {
      for (std::size_t start = 0; start < indices.size(); start += largest) {
        Batch batch{SlurmMode::kArray, {}};
        batch.jobs.assign(indices.begin() + start, indices.begin() + std::min(indices.size(), start + largest));
        if (batch.jobs.size() == 1) batch.mode = SlurmMode::kPerPoint;
        result.push_back(std::move(batch));
      }
    }
  }
  return result;
}

std::string SlurmScheduler::comment_for(const Batch& batch, const std::vector<JobSpec>& jobs) {
  std::vector<std::string> keys;
  for (const std::size_t i : batch.jobs) keys.push_back(jobs[i].key);
  const std::string points = keys.size() <= 100 ? fmt::format("{}", fmt::join(keys, ","))
                                                : fmt::format("{}-and-{}-more", keys.front(), keys.size() - 1);
  const std::string& attempt = jobs[batch.jobs.front()].attempt;
  return attempt.empty() ? points : attempt + ":" + points;
}

std::string SlurmScheduler::abandoned_marker(const Batch& batch, const std::vector<JobSpec>& jobs) const {
  // The first point's status stem: its own to this submission (the attempt is the run's id).
  return context_.jobs_dir + "/status/" + status_stem(jobs[batch.jobs.front()]) + ".abandoned";
}

JobScript SlurmScheduler::script_for(const Batch& batch, const std::vector<JobSpec>& jobs) const {
  JobScript script;
  script.mode = batch.mode;
  script.setup = options_.setup;
  script.status_dir = context_.jobs_dir + "/status";
  script.abandoned_marker = abandoned_marker(batch, jobs);
  const JobSpec& first = jobs[batch.jobs.front()];
  int most_ranks = 0;
  int most_per_node = 0;
  bool overcommit = false;
  double time_s = kJobMarginS;
  for (const std::size_t i : batch.jobs) {
    const JobSpec& job = jobs[i];
    most_ranks = std::max(most_ranks, job.ranks);
    most_per_node = std::max(most_per_node, job.ranks_per_node);
    overcommit = overcommit || overcommits(job);
    const double limit = point_limit_s(job);
    time_s = batch.mode == SlurmMode::kPack ? time_s + limit + kPackStepMarginS : limit + kJobMarginS;
    script.points.push_back({status_stem(job), job.threads_per_rank, ranks_on_node(job), limit,
                             job.measurements_path, attempt_log_path(job), command_for(job)});
  }
  // The job's name tags every job of the sweep (one query finds them all); the comment says which
  // points it runs, and in which attempt: a job whose sbatch gave no answer is found by it.
  std::vector<std::string>& sbatch = script.sbatch;
  sbatch.push_back("--job-name=" + job_name());
  sbatch.push_back("--comment=" + comment_for(batch, jobs));
  sbatch.push_back(fmt::format("--nodes={}", first.nodes));
  sbatch.push_back(most_per_node > 0 ? fmt::format("--ntasks-per-node={}", most_per_node)
                                     : fmt::format("--ntasks={}", most_ranks));
  if (first.threads_per_rank > 0) sbatch.push_back(fmt::format("--cpus-per-task={}", first.threads_per_rank));
  sbatch.push_back(fmt::format("--time={}", minutes_for(time_s)));
  if (!options_.partition.empty()) sbatch.push_back("--partition=" + options_.partition);
  if (!options_.account.empty()) sbatch.push_back("--account=" + options_.account);
  if (!options_.qos.empty()) sbatch.push_back("--qos=" + options_.qos);
  if (!options_.constraint.empty()) sbatch.push_back("--constraint=" + options_.constraint);
  if (options_.exclusive) sbatch.emplace_back("--exclusive");
  // The job's GPUs on each node; srun's steps inside inherit the request (SLURM_GPUS_PER_NODE) and
  // see them all (CUDA_VISIBLE_DEVICES), and each rank takes its local rank's, modulo their count.
  if (const int gpus = gpus_per_node(first); gpus > 0) sbatch.push_back(fmt::format("--gpus-per-node={}", gpus));
  if (overcommit) sbatch.emplace_back("--overcommit");
  // The harness decides what runs again (resume, --retry-failed); a requeued job would run a
  // point whose end the harness has already recorded. The `sbatch` option cannot say --requeue.
  sbatch.emplace_back("--no-requeue");
  if (batch.mode == SlurmMode::kArray) {
    sbatch.push_back(fmt::format("--array=0-{}{}", batch.jobs.size() - 1,
                                 options_.array_throttle > 0 ? fmt::format("%{}", options_.array_throttle) : ""));
  }
  sbatch.insert(sbatch.end(), options_.sbatch.begin(), options_.sbatch.end());
  return script;
}

std::string SlurmScheduler::output_option(SlurmMode mode) const {
  // sbatch reads the name as a pattern: a '%' of the directory's own is written "%%" (a
  // backslash, which would turn the pattern off, is refused by prepare()).
  std::string directory;
  for (const char c : context_.jobs_dir) directory += c == '%' ? std::string("%%") : std::string(1, c);
  return "--output=" + directory + "/batch/" + (mode == SlurmMode::kArray ? "%A_%a" : "%j") + ".out";
}

double SlurmScheduler::requested_node_hours(const Batch& batch, const std::vector<JobSpec>& jobs) const {
  const JobScript script = script_for(batch, jobs);
  int64_t minutes = 0;
  for (const auto& option : script.sbatch) {
    if (option.rfind("--time=", 0) == 0) minutes = std::stoll(option.substr(7));
  }
  const double tasks = batch.mode == SlurmMode::kArray ? static_cast<double>(batch.jobs.size()) : 1.0;
  return tasks * jobs[batch.jobs.front()].nodes * minutes / 60.0;
}

std::string SlurmScheduler::plan(const std::vector<JobSpec>& jobs) {
  std::string note;
  if (config(); !config_problem_.empty()) {
    note = fmt::format(" (no cluster answered here, so SLURM's defaults: MaxArraySize {}; {})",
                       config_->max_array_size, config_problem_);
  }
  std::string text;
  double node_hours = 0;
  const auto all = batches(jobs);
  for (std::size_t b = 0; b < all.size(); ++b) {
    const Batch& batch = all[b];
    const JobSpec& first = jobs[batch.jobs.front()];
    const std::string script_path = fmt::format("{}/scripts/{}-{}.sh", context_.jobs_dir, first.name, mode_name(batch.mode));
    node_hours += requested_node_hours(batch, jobs);
    text += fmt::format("--- job {} of {}: {} of {} point(s){}\n{}\n", b + 1, all.size(), mode_name(batch.mode),
                        batch.jobs.size(), gpu_note(batch, jobs),
                        shell_quoted({"sbatch", "--parsable", "--chdir=" + context_.working_directory,
                                      output_option(batch.mode), script_path}));
    text += render_job_script(template_text_, script_for(batch, jobs));
  }
  text += fmt::format("slurm: {} job(s) for {} point(s), at most {:.2f} node-hour(s) requested{}\n", all.size(),
                      jobs.size(), node_hours, note);
  return text;
}

}  // namespace harness
