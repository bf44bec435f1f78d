#include "harness/launch/local_scheduler.h"

#include "backends/registry.h"  // cuda_status, mps_control_running
#include "harness/common/machine.h"
#include "harness/common/mpi_build.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/option_rows.h"
#include "harness/common/resources.h"
#include "harness/common/text.h"
#include "harness/launch/simulated_node.h"
#include "harness/launch/slurm_commands.h"

namespace harness {
namespace {

// Whether the user chose how mpirun reaches its hosts (another agent than ssh, or ssh's
// arguments): on mpirun's command line, in the environment or in a parameter file. The harness
// then leaves it as they chose. Open MPI 4 names the parameters plm_rsh_*, Open MPI 5's PRRTE
// plm_ssh_* (PRTE_MCA_ in the environment); a parameter file named by mca_base_param_files counts
// as one that may set them. Hydra's are -launcher, -bootstrap (and their -exec) on its command line
// and HYDRA_LAUNCHER*, HYDRA_BOOTSTRAP* in the environment.
bool user_configures_remote_shell(const std::vector<std::string>& mpirun_args) {
  const auto names_it = [](std::string_view text) {
    for (const std::string_view name : {"rsh_agent", "rsh_args", "ssh_agent", "ssh_args", "param_files"}) {
      if (text.find(name) != std::string_view::npos) return true;
    }
    return false;
  };
  const auto names_hydras = [](std::string_view argument) {
    return argument.starts_with("-launcher") || argument.starts_with("-bootstrap") ||
           argument.starts_with("--launcher") || argument.starts_with("--bootstrap");
  };
  if (std::ranges::any_of(mpirun_args, names_it) || std::ranges::any_of(mpirun_args, names_hydras)) return true;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if ((variable.starts_with("OMPI_MCA_") || variable.starts_with("PRTE_MCA_")) &&
        names_it(variable.substr(0, variable.find('=')))) {
      return true;
    }
    if (variable.starts_with("HYDRA_LAUNCHER") || variable.starts_with("HYDRA_BOOTSTRAP")) return true;
  }
  const char* home = std::getenv("HOME");
  for (const std::string& file : {std::string(home != nullptr ? home : "") + "/.openmpi/mca-params.conf",
                                  std::string("/etc/openmpi/openmpi-mca-params.conf")}) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with("#") && names_it(line)) return true;
    }
  }
  return false;
}

}  // namespace

const std::vector<OptionRow<LocalOptions>>& local_option_rows() {
  static const std::vector<OptionRow<LocalOptions>> rows = {
      integer_row("max_parallel", "an integer from 1 to 64",
                  "points run at once (1: each point has the machine to itself, as measurements need)", {1, 64},
                  &LocalOptions::max_parallel),
      {"mpirun_args", "a list of strings", "arguments for mpirun before the rank program",
       R"({"type": "array", "items": {"type": "string"}})",
       [](LocalOptions& o, const Json& v, const std::string& where) {
         if (!v.is_array()) fail_expected(where, "a list of strings", v);
         o.mpirun_args.clear();
         for (std::size_t i = 0; i < v.size(); ++i) {
           o.mpirun_args.push_back(read_nonempty_string(v[i], fmt::format("{}[{}]", where, i), "a string"));
         }
       },
       [](const LocalOptions& o) { return Json(o.mpirun_args); }},
      {"hosts", "a list of distinct host names",
       "hosts to start ranks on (mpirun --host, through ssh); a point with nodes N uses the first N",
       R"({"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true})",
       [](LocalOptions& o, const Json& v, const std::string& where) {
         if (!v.is_array() || v.empty()) fail_expected(where, "a non-empty list of distinct host names", v);
         o.hosts.clear();
         for (std::size_t i = 0; i < v.size(); ++i) {
           const std::string item = fmt::format("{}[{}]", where, i);
           std::string host = read_nonempty_string(v[i], item, "a host name");
           if (!is_host_name(host)) {
             fail_expected(item, "a host name (dot-separated labels of letters, digits and '-', at most 253 characters)",
                           v[i]);
           }
           if (std::find(o.hosts.begin(), o.hosts.end(), host) != o.hosts.end()) {
             fail_expected(item, "a host not listed before", v[i]);
           }
           o.hosts.push_back(std::move(host));
         }
       },
       [](const LocalOptions& o) { return Json(o.hosts); }},
      boolean_row("simulate_hosts",
                  "simulate the hosts on this machine (a UTS namespace each, TCP over the loopback; needs root)",
                  &LocalOptions::simulate_hosts),
  };
  return rows;
}

Allocation current_allocation() {
  Allocation allocation;
  const char* job_id = std::getenv("SLURM_JOB_ID");
  if (job_id == nullptr || *job_id == '\0' || find_program("srun").empty()) return allocation;
  allocation.job_id = job_id;
  const auto number = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::max(0, std::atoi(value)) : 0;
  };
  allocation.nodes = std::max(1, number("SLURM_JOB_NUM_NODES"));
  allocation.tasks = number("SLURM_NTASKS");
  if (const char* cpus = std::getenv("SLURM_JOB_CPUS_PER_NODE"); cpus != nullptr) {
    allocation.cpus_per_node = parse_slurm_cpus_per_node(cpus).value_or(std::vector<int>{});
  }
  allocation.srun_has_mpi_plugin = SlurmCommands(std::filesystem::temp_directory_path().string())
                                       .srun_offers_mpi(srun_mpi_plugin(build_mpi_family()));
  return allocation;
}

LocalScheduler::LocalScheduler(LocalOptions options, UsableCpus cpus, bool is_root, Allocation allocation,
                               MpiFamily family)
    : options_(std::move(options)),
      family_(family),
      launcher_(usual_launcher(family)),
      cpus_(std::move(cpus)),
      cores_(cpus_.cores()),
      is_root_(is_root),
      allocation_(std::move(allocation)) {}

namespace {
UsableCpus cores_of_their_own(int cores) {
  UsableCpus cpus;
  for (int cpu = 0; cpu < cores; ++cpu) cpus.cpus.push_back(cpu);
  cpus.online = cpus.physical_cores = cores;
  return cpus;
}

}  // namespace

LocalScheduler::LocalScheduler(LocalOptions options, int cores, bool is_root, Allocation allocation, MpiFamily family)
    : LocalScheduler(std::move(options), cores_of_their_own(cores), is_root, std::move(allocation), family) {}

LocalScheduler::LocalScheduler(LocalOptions options)
    : LocalScheduler(std::move(options), usable_cpus(), ::geteuid() == 0, current_allocation(), build_mpi_family()) {
  // Where the usual name is not on PATH, the launcher configure found.
  if (find_program(launcher_).empty()) {
    if (const std::string configured = build_launcher(); !configured.empty()) launcher_ = configured;
  }
}

void LocalScheduler::check_available() const {
  // Otherwise every point's mpirun fails with exit code 2 and the reason is only in its log. The
  // experiment asks for what this user cannot have, as it might ask for too many ranks: bad input
  // (exit 2), not a failure to launch.
  if (options_.simulate_hosts && !is_root_) {
    throw ConfigError(
        "launcher.simulate_hosts: simulated hosts need root (each is a UTS namespace, "
        "unshare(CLONE_NEWUTS)); run as root or list real hosts without \"simulate_hosts\"");
  }
  if (family_ == MpiFamily::kMpich) {
    if (options_.simulate_hosts) {
      // Hydra's agent: a program of its own beside harness (its -launcher-exec takes one word).
      const std::filesystem::path self = running_executable();
      const std::filesystem::path agent = self.parent_path() / kSimulatedNodeAgent;
      std::error_code error;
      if (!self.empty() && !std::filesystem::is_regular_file(agent, error)) {
        throw LaunchError(fmt::format("launcher.simulate_hosts: {} not found: hydra's mpiexec enters simulated hosts "
                                      "through it (it is built and installed beside harness)",
                                      agent.string()));
      }
    }
    // Open MPI's own options would stop hydra before any rank starts, with its usage text.
    for (std::size_t i = 0; i < options_.mpirun_args.size(); ++i) {
      const std::string& argument = options_.mpirun_args[i];
      if (argument == "--mca" || argument == "-mca" || argument == "-x" || argument == "--oversubscribe" ||
          argument == "--allow-run-as-root" || argument == "--host" || argument == "--hostfile") {
        throw ConfigError(fmt::format("launcher.mpirun_args[{}]: \"{}\" is Open MPI's mpirun's, and this harness "
                                      "is built against MPICH, whose hydra mpiexec takes -genv NAME VALUE for "
                                      "MPICH's settings (MPIR_CVAR_*; docs/mpi.md)",
                                      i, argument));
      }
    }
  }
  if (allocation_.inside()) {
    // srun, found when the allocation was read. Open MPI's ranks have long been started without a
    // plugin where srun lacks pmix (its default may serve them); MPICH's ranks without pmi2 would
    // each start as a world of their own.
    if (family_ == MpiFamily::kMpich && !allocation_.srun_has_mpi_plugin) {
      throw LaunchError(fmt::format("inside SLURM allocation {} the local launcher starts ranks with srun --mpi=pmi2 "
                                    "for this MPICH build, and `srun --mpi=list` does not offer pmi2: run hydra's "
                                    "mpiexec in the allocation yourself, or use the slurm launcher (docs/mpi.md)",
                                    allocation_.job_id));
    }
    return;
  }
  if (find_program(launcher_).empty()) {
    throw LaunchError(fmt::format("{} not found on PATH, nor where configure found this build's ({}): install {} "
                                  "(bash .ci/install-deps), or put the launcher of the MPI this harness was built "
                                  "against on PATH",
                                  launcher_, mpi_build().launcher.empty() ? "none" : mpi_build().launcher,
                                  family_ == MpiFamily::kOpenMpi ? "openmpi-bin" : "mpich"));
  }
  // A rank program started by another MPI's launcher runs every rank as a world of its own.
  launcher_ = launcher_of_family(family_, launcher_);
}

ResourceLimits LocalScheduler::limits() const {
  ResourceLimits limits;
  if (allocation_.inside() && !allocation_.cpus_per_node.empty()) {
    int cpus = 0;
    for (const int node : allocation_.cpus_per_node) cpus += node;
    limits.max_ranks = kRanksPerCore * cpus;
    limits.why =
        fmt::format("the local launcher runs at most {} ranks per core, and SLURM allocation {} has {} CPUs on its "
                    "{} node(s)",
                    kRanksPerCore, allocation_.job_id, cpus, allocation_.cpus_per_node.size());
  } else {
    limits.max_ranks = kRanksPerCore * cores_;
    limits.why = fmt::format("the local launcher runs at most {} ranks per core, and this machine has {}",
                             kRanksPerCore, cpus_.describe());
  }
  limits.max_nodes = nodes_available();
  if (allocation_.inside()) {
    limits.nodes_why = fmt::format("the local launcher runs in SLURM allocation {} of {} node(s)",
                                   allocation_.job_id, allocation_.nodes);
  } else if (!options_.hosts.empty()) {
    limits.nodes_why = fmt::format("the local launcher's \"hosts\" lists {} host(s)", options_.hosts.size());
  } else {
    limits.nodes_why = "the local launcher runs every rank on this machine; more nodes need \"hosts\" in its "
                       "options or a cluster launcher such as \"slurm\"";
  }
  // Named hosts and an allocation's nodes are taken to be like this machine, as the device check
  // takes them to have a GPU where this one has.
  limits.gpus_as_here = true;
  return limits;
}

std::string LocalScheduler::caution(const std::vector<JobSpec>& jobs) const {
  std::vector<std::string> cautions;
  if (options_.max_parallel != 1) {
    cautions.push_back(fmt::format("launcher.max_parallel is {}: points run {} at a time and share this machine's "
                                   "{}, so their timings disturb each other",
                                   options_.max_parallel, options_.max_parallel, cpus_.describe()));
  }
  // Ranks on this machine (no hosts, or simulated ones) or on an allocation's nodes whose threads
  // outnumber their cores: their compute waits for a core, which reads as poor scaling. Real
  // hosts' cores are not known here; the records say it for every point
  // (measurements.oversubscribed).
  if (options_.hosts.empty() || options_.simulate_hosts) {
    std::vector<std::string> oversubscribed;
    for (const JobSpec& job : jobs) {
      const int threads = threads_per_rank(job);
      const NodeShare node = busiest_node(job);
      if (node.ranks * threads <= node.cpus) continue;
      oversubscribed.push_back(fmt::format("{} ({}{})", job.name,
                                           describe_oversubscription({"", node.ranks, threads, node.cpus}),
                                           allocation_.inside() ? " of a node" : ""));
    }
    if (!oversubscribed.empty()) {
      const std::size_t shown = std::min<std::size_t>(oversubscribed.size(), 3);
      std::string list;
      for (std::size_t i = 0; i < shown; ++i) list += (i > 0 ? ", " : "") + oversubscribed[i];
      if (oversubscribed.size() > shown) list += fmt::format(" and {} more", oversubscribed.size() - shown);
      cautions.push_back(fmt::format(
          "oversubscribed: {} point(s) run more rank threads than {}: {}; their compute time includes waiting for a "
          "core",
          oversubscribed.size(),
          allocation_.inside() ? fmt::format("the CPUs SLURM allocation {} gives a node", allocation_.job_id)
                               : "this machine's " + cpus_.describe(),
          list));
    }
  }
  if (options_.hosts.empty() || options_.simulate_hosts) {
    const CudaStatus cuda = cuda_status();
    if (cuda.usable) cautions.push_back(shared_gpu_caution(jobs, cuda.devices, mps_control_running()));
  }
  std::string text;
  for (const auto& caution : cautions) {
    if (!caution.empty()) text += (text.empty() ? "" : "\n") + caution;
  }
  return text;
}

std::string shared_gpu_caution(const std::vector<JobSpec>& jobs, int gpus, bool mps) {
  if (mps) return "";
  std::vector<std::string> sharing;
  for (const JobSpec& job : jobs) {
    // gpus_per_node: the ranks of the job's busiest node, each wanting a GPU (device "cuda").
    if (job.gpus_per_node > gpus) sharing.push_back(job.name);
  }
  if (sharing.empty()) return "";
  return fmt::format("ranks share a GPU without MPS in {} point(s) ({}{}): this machine shows its ranks {} GPU(s), "
                     "which time-slice between processes (measured on one H100: a 1 KiB staged reduction took "
                     "550 us, 20-22 us with MPS); start MPS first: nvidia-cuda-mps-control -d (docs/gpus.md)",
                     sharing.size(), sharing.front(),
                     sharing.size() > 1 ? fmt::format(" and {} more", sharing.size() - 1) : "", gpus);
}

LocalScheduler::NodeShare LocalScheduler::busiest_node(const JobSpec& job) const {
  const int nodes = std::max(1, job.nodes);
  const int ranks = std::max(1, job.ranks);
  // Simulated hosts share this machine's cores, as do the ranks of a point without hosts.
  if (!allocation_.inside() && (options_.hosts.empty() || options_.simulate_hosts)) return {cores_, ranks};
  // Each node's ranks share its own CPUs: as many ranks as the job puts on a node (the first
  // nodes one more when they do not divide evenly).
  NodeShare share{cores_, job.ranks_per_node > 0 ? job.ranks_per_node : (ranks + nodes - 1) / nodes};
  // An allocation's nodes have what SLURM gives them (the fewest among the job's, which srun takes
  // in the allocation's order); named hosts are taken to be like this machine.
  if (allocation_.inside() && !allocation_.cpus_per_node.empty()) {
    const std::size_t used = std::min<std::size_t>(static_cast<std::size_t>(nodes), allocation_.cpus_per_node.size());
    share.cpus = *std::min_element(allocation_.cpus_per_node.begin(),
                                   allocation_.cpus_per_node.begin() + static_cast<std::ptrdiff_t>(used));
  }
  return share;
}

int LocalScheduler::threads_per_rank(const JobSpec& job) const {
  if (job.threads_per_rank > 0) return job.threads_per_rank;
  const NodeShare node = busiest_node(job);
  return std::max(1, node.cpus / node.ranks);
}

std::vector<std::string> LocalScheduler::srun_command(const JobSpec& job, int threads) const {
  // srun passes its environment on to the ranks: `env` sets what they need, as the record shows.
  std::vector<std::string> argv = {"env"};
  for (const char* variable :
       {"HARNESS_THREADS_PER_RANK", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) {
    argv.push_back(fmt::format("{}={}", variable, threads));
  }
  for (const auto& [key, value] : job.environment) argv.push_back(key + "=" + value);
  argv.insert(argv.end(), {"srun", fmt::format("--nodes={}", job.nodes), fmt::format("--ntasks={}", job.ranks)});
  if (allocation_.srun_has_mpi_plugin) argv.push_back(fmt::format("--mpi={}", srun_mpi_plugin(family_)));
  if (job.ranks_per_node > 0) argv.push_back(fmt::format("--ntasks-per-node={}", job.ranks_per_node));
  // More ranks than the allocation has tasks, as mpirun --oversubscribe would run them.
  if (allocation_.tasks > 0 && job.ranks > allocation_.tasks) argv.emplace_back("--overcommit");
  argv.emplace_back("--kill-on-bad-exit=1");
  argv.insert(argv.end(), job.argv.begin(), job.argv.end());
  return argv;
}

int LocalScheduler::nodes_available() const {
  if (allocation_.inside() || options_.hosts.empty()) return allocation_.nodes;
  return static_cast<int>(options_.hosts.size());
}

void LocalScheduler::place_on_hosts(const JobSpec& job, MpiFamily family, MpiLaunch& launch) const {
  if (options_.hosts.empty()) return;
  // The job's ranks on its first `nodes` hosts: ranks_per_node each, or spread as evenly as
  // possible (the first hosts one more), in rank order as the launchers fill slots.
  const int nodes = std::max(1, job.nodes);
  for (int node = 0; node < nodes; ++node) {
    const int ranks = job.ranks_per_node > 0 ? job.ranks_per_node
                                             : job.ranks / nodes + (node < job.ranks % nodes ? 1 : 0);
    launch.hosts.emplace_back(options_.hosts[static_cast<std::size_t>(node)], ranks);
  }
  if (options_.simulate_hosts) {
    // The launcher calls the agent as it would call ssh; the harness that runs the ranks is also
    // the agent: `harness simulated-node` for mpirun, and for hydra, which runs its agent as one
    // word, the program beside it that does the same.
    const std::filesystem::path harness_binary = job.argv.front();
    if (family == MpiFamily::kOpenMpi) {
      launch.simulated_host_agent = {harness_binary.string(), "simulated-node"};
    } else {
      launch.simulated_host_agent = {(harness_binary.parent_path() / kSimulatedNodeAgent).string()};
    }
    launch.environment.emplace_back("GLOO_SOCKET_IFNAME", "lo");  // between simulated hosts only the loopback exists
    // Every simulated host's slots are this machine's cores, which the launcher cannot know: with
    // more ranks than cores, waiting ranks must yield or they starve the ones they wait for
    // (measured on 2 x 2 ranks on 2 cores: a 64 KiB MPI_Allreduce took 16 ms busy-polling, 72 us
    // yielding). Unless mpirun_args sets it (mpirun refuses an MCA parameter given twice).
    // MPICH's ch4:ucx polls without yielding whatever it is told (docs/mpi.md).
    const bool user_sets_yield = std::ranges::find(options_.mpirun_args, "mpi_yield_when_idle") !=
                                 options_.mpirun_args.end();
    launch.idle_ranks_yield = family == MpiFamily::kOpenMpi && job.ranks > cores_ && !user_sets_yield;
  } else if (!user_configures_remote_shell(options_.mpirun_args) && !find_program("ssh").empty()) {
    // The launcher starts its daemon on each host through ssh, which waits as long as TCP does for
    // a host that does not answer (measured here: a silent address held mpirun for the 700 s it
    // was given; with ConnectTimeout=5 it failed in 5.3 s): the point would wait out its timeout_s
    // with no rank started. No prompt could be answered either (the job has no terminal).
    launch.ssh_connect_timeout_s = kSshConnectTimeoutS;
  }
}

std::vector<std::string> LocalScheduler::command_for(const JobSpec& job) const {
  const int threads = threads_per_rank(job);
  if (allocation_.inside()) return srun_command(job, threads);
  MpiLaunch launch;
  launch.launcher = launcher_;
  // A named build of another MPI starts with its own family's launcher: the one its configure found.
  MpiFamily family = family_;
  if (const auto job_family = mpi_family_named(job.mpi_family); job_family && *job_family != family_) {
    family = *job_family;
    launch.launcher = !job.mpi_launcher.empty() ? job.mpi_launcher : usual_launcher(family);
  }
  launch.ranks = job.ranks;
  launch.as_root = is_root_;
  // Open MPI counts a slot per physical core it may use (a core's hyperthreads once).
  launch.more_ranks_than_slots = job.ranks > cpus_.slots();
  // Unbound (-bind-to none), as Horovod runs its ranks: a rank's threads get room, and a rank is
  // not pinned to the core where the launcher and the harness wake up (measured here: the CNN on
  // one bound rank trained 722-817 images/s, unbound 785-867, alternating runs). Open MPI binds
  // each rank to one core when there are at most 2 ranks otherwise.
  // The rank program sizes LibTorch's pools from HARNESS_THREADS_PER_RANK; OpenBLAS and OpenMP
  // read their own variables when the library loads, before any code of ours runs.
  for (const char* variable :
       {"HARNESS_THREADS_PER_RANK", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) {
    launch.environment.emplace_back(variable, std::to_string(threads));
  }
  launch.environment.insert(launch.environment.end(), job.environment.begin(), job.environment.end());
  place_on_hosts(job, family, launch);
  launch.user_arguments = options_.mpirun_args;
  launch.program = job.argv;
  return mpi_launch_command(family, launch);
}

JobId LocalScheduler::submit(const JobSpec& job) {
  if (job.nodes > nodes_available()) {
    throw LaunchError(fmt::format("{}: the local launcher has {} node(s), and the job asks for {}", job.name,
                                  nodes_available(), job.nodes));
  }
  ProcessRequest request;
  request.argv = command_for(job);
  request.log_path = attempt_log_path(job);
  request.working_directory = job.working_directory;
  request.timeout_s = job.time_limit_s;
  return jobs_.start(request);
}

std::unique_ptr<Scheduler> make_local_scheduler(const LauncherSpec& spec) {
  LocalOptions options;
  read_scheduler_options(spec, local_option_rows(), options);
  if (options.simulate_hosts && options.hosts.empty()) {
    throw ConfigError(fmt::format("{}.simulate_hosts: expected the hosts to simulate in option \"hosts\", got none",
                                  spec.where.empty() ? "launcher" : spec.where));
  }
  return std::make_unique<LocalScheduler>(std::move(options));
}

}  // namespace harness
