// The launchers of the two MPI families the harness knows, and how each is told what the local
// launcher needs (local_scheduler.h): Open MPI's mpirun, and hydra's mpiexec, with which MPICH and
// its family (MVAPICH2, Intel MPI) start ranks. A build's points start with the launcher of the
// MPI it was built against (mpi_build.h), never with whichever mpirun comes first on PATH: a rank
// program linked against one MPI and started by the other's launcher runs every rank as a world
// of its own.
//
//                     Open MPI (mpirun)                  hydra (mpiexec)
//   ranks             -n N                               -n N
//   as root           --allow-run-as-root                (nothing)
//   more than slots   --oversubscribe                    (nothing: hydra places any number)
//   unbound ranks     --bind-to none                     -bind-to none
//   a variable        -x K=V                             -genv K V
//   hosts             --host a:2,b:2                     -hosts a:2,b:2
//   remote shell      --mca plm_rsh_agent AGENT          -launcher rsh -launcher-exec AGENT
//   ssh's options     --mca plm_rsh_args "..."           HYDRA_LAUNCHER_EXTRA_ARGS (environment)
//   idle ranks yield  --mca mpi_yield_when_idle 1        (none: refused where needed)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace harness {

enum class MpiFamily { kOpenMpi, kMpich };

// "openmpi" or "mpich"; nullopt for anything else.
std::optional<MpiFamily> mpi_family_named(std::string_view name);
std::string_view mpi_family_name(MpiFamily family);
// "Open MPI's mpirun", "hydra's mpiexec (MPICH)": for messages.
std::string_view mpi_launcher_description(MpiFamily family);
// The family of this build's MPI (mpi_build.h).
MpiFamily build_mpi_family();

// What the local launcher asks of one job's launch.
struct MpiLaunch {
  std::string launcher;  // the program: a path or a name on PATH
  int ranks = 1;
  bool as_root = false;
  bool more_ranks_than_slots = false;
  std::vector<std::pair<std::string, std::string>> environment;  // given to every rank
  // Each host and its ranks, in rank order; empty: this machine only.
  std::vector<std::pair<std::string, int>> hosts;
  // The remote-shell agent that enters a simulated host (`harness simulated-node`, one program
  // with its arguments), "" for real hosts.
  std::vector<std::string> simulated_host_agent;
  bool idle_ranks_yield = false;
  int ssh_connect_timeout_s = 0;  // > 0: real hosts, through ssh, given up after this long
  std::vector<std::string> user_arguments;  // the launcher's own (mpirun_args), before the program
  std::vector<std::string> program;
};

// The launcher's command line (behind `env NAME=VALUE` where the launcher itself needs a
// variable: hydra's ssh options). Throws LaunchError for what the family's launcher cannot do
// (simulated hosts and yielding ranks under hydra: refused before, by check_available).
std::vector<std::string> mpi_launch_command(MpiFamily family, const MpiLaunch& launch);

// The family a launcher belongs to, from what `LAUNCHER --version` printed ("mpirun (Open MPI)
// 4.1.4"; hydra's "HYDRA build details:"; "Intel(R) MPI Library"): nullopt when neither.
std::optional<MpiFamily> launcher_family_from_version(std::string_view version_output);

// The plugin srun starts the family's ranks with (srun --mpi=PLUGIN): "pmix" for Open MPI, whose
// ranks need PMIx under srun (Debian's has no PMI-2), "pmi2" for MPICH's family, whose ranks built
// for hydra speak PMI-1's wire protocol, which SLURM's pmi2 plugin serves as well.
std::string_view srun_mpi_plugin(MpiFamily family);

// The family's usual launcher name: "mpirun" (Open MPI), "mpiexec" (hydra).
std::string usual_launcher(MpiFamily family);

// The launcher of this build: the one configure found where it still exists, else the family's
// usual name on PATH; "" when neither is there.
std::string build_launcher();

// The launcher that starts ranks of `family`: `launcher` unless its `--version` says it is the
// other family's (Debian's plain mpiexec is Open MPI's where both MPIs are installed), then this
// build's where that is of `family`. A launcher that does not say (a wrapper script) is taken as
// it is. Throws LaunchError, in one line, where neither is of `family`.
std::string launcher_of_family(MpiFamily family, const std::string& launcher);

}  // namespace harness
