// The options of the SLURM launcher: "launcher": {"name": "slurm", "partition": "gpu", ...}.
//
// Every value that reaches a job script is checked here against the characters its field may
// hold, before anything is rendered: resource values become "#SBATCH" lines, which sbatch reads
// without a shell and which cannot be quoted, so a newline, a quote, "$(...)" or a ";" in a
// partition name is refused, not escaped. The one exception is `setup`: its lines are shell
// commands by design (module load, source), run as written; each must be a single line.
#pragma once

#include <string>
#include <vector>

#include "harness/common/option_table.h"

namespace harness {

// How points become jobs (slurm_scheduler.h).
enum class SlurmMode {
  kAuto,      // pack for points expected to be short, array otherwise
  kPerPoint,  // one job per point
  kArray,     // one job array per group of points with the same resources
  kPack,      // one allocation per group, its points run one after another as job steps
};

// What starts the ranks inside a job.
enum class RankStarter {
  kAuto,    // srun when `srun --mpi=list` offers the build's MPI plugin, otherwise mpirun
  kSrun,    // srun --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH's family): mpi_dialect.h
  kMpirun,  // the MPI's own launcher, which reads the allocation from SLURM: Open MPI's mpirun, hydra's mpiexec
};

struct SlurmOptions {
  std::string partition;
  std::string account;
  std::string qos;
  std::string constraint;
  double time_limit_s = 0;  // per point; 0: the point's timeout_s
  // The longest time a job may ask for; 0: the partition's MaxTime (365 days when unlimited).
  // Packs are split so that none asks for more.
  double max_time_per_job_s = 0;
  bool exclusive = false;
  // GPUs per node for every job (sbatch --gpus-per-node); 0: what each point needs, one per rank
  // on a node for points on "cuda" (JobSpec::gpus_per_node), none otherwise.
  int gpus_per_node = 0;
  // More ranks on a node than it has CPUs (sbatch --overcommit), as the local launcher
  // oversubscribes: for functional sweeps and small test clusters, never for measurements.
  bool overcommit = false;
  // More "#SBATCH" options: "--mail-type=END"; none that the harness sets itself (--job-name,
  // --time, --array, ...) or that would leave a job it cannot follow (--requeue, --clusters,
  // --signal, --export=NONE, --wait, --hold, --begin, --test-only), which are refused with the reason.
  std::vector<std::string> sbatch;
  std::vector<std::string> setup;   // shell lines before the ranks start: "module load openmpi"
  SlurmMode mode = SlurmMode::kAuto;
  RankStarter start_ranks_with = RankStarter::kAuto;
  // srun's MPI plugin (srun --mpi=...); "": the build's family's (mpi_dialect.h: srun_mpi_plugin).
  std::string srun_mpi;
  int array_throttle = 0;        // array tasks running at once (%N); 0: no limit
  std::string template_path;     // "" = the harness's own (slurm/job.sh.in)
};

const std::vector<OptionRow<SlurmOptions>>& slurm_option_rows();

std::string_view mode_name(SlurmMode mode);
std::string_view starter_name(RankStarter starter);

// Points whose expected run is shorter than this are packed by mode "auto": below it, the
// queue wait of a job per point would cost more than the points themselves.
inline constexpr double kPackBelowSeconds = 300;

}  // namespace harness
