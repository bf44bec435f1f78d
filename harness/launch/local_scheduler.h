// The default scheduler: one `mpirun -n R` per point, on this machine. Inside a SLURM allocation
// (`harness run` in an sbatch script or salloc: SLURM_JOB_ID is set), `srun` starts the ranks
// instead, on the allocation's nodes.
#pragma once

#include <string>
#include <vector>

#include "harness/common/usable_cpus.h"
#include "harness/launch/mpi_dialect.h"
#include "harness/launch/process_jobs.h"
#include "harness/launch/scheduler.h"

namespace harness {

// "launcher": {"name": "local", ...}
struct LocalOptions {
  // Points run at once. More than one shares the machine's cores between points, which disturbs
  // every measurement; for functional sweeps only.
  int max_parallel = 1;
  std::vector<std::string> mpirun_args;  // before the rank program, e.g. ["--mca", "btl", "self,vader"]
  // Hosts that mpirun starts ranks on (through ssh, as mpirun --host does); a point with `nodes`
  // N runs on the first N. Empty: this machine only. Unless the user configures mpirun's remote
  // shell (plm_rsh_agent, plm_rsh_args), ssh is given a connect timeout (kSshConnectTimeoutS), so
  // that a host that does not answer fails the point then, not at its timeout_s.
  std::vector<std::string> hosts;
  // The hosts are simulated on this machine, each a UTS namespace of that name (harness
  // simulated-node), with TCP over the loopback between them: multi-node runs without a cluster.
  bool simulate_hosts = false;
};

const std::vector<OptionRow<LocalOptions>>& local_option_rows();

// How long ssh may take to reach a host and exchange its banner before mpirun gives the host up.
inline constexpr int kSshConnectTimeoutS = 20;

// The SLURM allocation the harness runs in, from its environment.
struct Allocation {
  std::string job_id;  // "" = not in one
  int nodes = 1;       // SLURM_JOB_NUM_NODES
  int tasks = 0;       // SLURM_NTASKS; 0 = unknown
  // SLURM_JOB_CPUS_PER_NODE: each node's CPUs in the allocation, in its order; empty = unknown.
  std::vector<int> cpus_per_node;
  // Whether srun offers the MPI plugin of this build's family (srun_mpi_plugin: pmix for Open MPI,
  // pmi2 for MPICH).
  bool srun_has_mpi_plugin = true;
  bool inside() const { return !job_id.empty(); }
};
// Reads SLURM_JOB_ID, SLURM_JOB_NUM_NODES, SLURM_NTASKS and SLURM_JOB_CPUS_PER_NODE (and asks
// srun once for the MPI plugin of this build's family).
Allocation current_allocation();

class LocalScheduler final : public Scheduler {
 public:
  // `cpus`, `is_root`, `allocation` and `family` are parameters so tests can check the flags for
  // any machine and MPI; the launcher is then the family's usual name ("mpirun", "mpiexec").
  LocalScheduler(LocalOptions options, UsableCpus cpus, bool is_root, Allocation allocation = {},
                 MpiFamily family = MpiFamily::kOpenMpi);
  // A machine of `cores` CPUs, each a core of its own, without a quota.
  LocalScheduler(LocalOptions options, int cores, bool is_root, Allocation allocation = {},
                 MpiFamily family = MpiFamily::kOpenMpi);
  // This machine, and this build's MPI (mpi_dialect.h).
  explicit LocalScheduler(LocalOptions options = {});

  std::string_view name() const override { return "local"; }
  // Also settles the launcher: the family's usual name on PATH ("mpirun", "mpiexec"), unless its
  // `--version` says it is the other family's, as a Debian machine's mpiexec is Open MPI's where
  // both MPIs are installed: then the one configure found for this build (mpi_build.h), and
  // where that is missing or not this family's either, a one-line refusal.
  void check_available() const override;
  // Oversubscription lets mpirun start any number of ranks, but past a few per core each rank's
  // LibTorch memory and time slices make the measurement meaningless: 8 per core at most.
  ResourceLimits limits() const override;
  int max_parallel() const override { return options_.max_parallel; }
  std::string caution(const std::vector<JobSpec>& jobs) const override;
  int threads_per_rank(const JobSpec& job) const override;
  std::vector<std::string> command_for(const JobSpec& job) const override;
  JobId submit(const JobSpec& job) override;
  std::vector<JobResult> poll(double wait_s) override { return jobs_.poll(wait_s); }
  void cancel(JobId job) override { jobs_.cancel(job); }

 private:
  static constexpr int kRanksPerCore = 8;
  // The node of `job` whose ranks have the fewest CPUs each: its CPUs and its ranks.
  struct NodeShare {
    int cpus = 1;
    int ranks = 1;
  };
  NodeShare busiest_node(const JobSpec& job) const;
  std::vector<std::string> srun_command(const JobSpec& job, int threads) const;
  // Where the job's ranks go, and how the launcher reaches its hosts (nothing without hosts).
  void place_on_hosts(const JobSpec& job, MpiFamily family, MpiLaunch& launch) const;
  int nodes_available() const;

  LocalOptions options_;
  MpiFamily family_;
  mutable std::string launcher_;  // settled by check_available
  UsableCpus cpus_;
  int cores_;  // cpus_.cores()
  bool is_root_;
  Allocation allocation_;
  ProcessJobs jobs_;
};

std::unique_ptr<Scheduler> make_local_scheduler(const LauncherSpec& spec);

// The warning for points on "cuda" whose ranks would share this machine's `gpus` GPUs while no
// MPS control daemon runs (`mps` false), or "": they time-slice the GPU.
std::string shared_gpu_caution(const std::vector<JobSpec>& jobs, int gpus, bool mps);

}  // namespace harness
