#include "harness/launch/local_launcher.h"

#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/study/settings.h"

namespace harness {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
}

const std::vector<std::string>& launcher_names() {
  static const std::vector<std::string> names = {"local"};
  return names;
}

std::unique_ptr<Launcher> make_launcher(const std::string& name) {
  if (name == "local") return std::make_unique<LocalLauncher>();
  throw ConfigError(fmt::format("launcher: unknown launcher {} (expected one of: {})",
                                describe_text(name), fmt::join(launcher_names(), ", ")));
}

LocalLauncher::LocalLauncher() : LocalLauncher(available_cores(), ::geteuid() == 0) {}

void LocalLauncher::check_available() const {
  if (find_program("mpirun").empty()) {
    throw LaunchError("mpirun not found on PATH (install openmpi-bin: bash .ci/install-deps)");
  }
}

std::vector<std::string> LocalLauncher::command_for(const LaunchRequest& request) const {
  const int ranks = request.settings.ranks;
  const int threads = resolved_threads_per_rank(request.settings, cores_);
  std::vector<std::string> argv = {"mpirun", "-n", std::to_string(ranks)};
  if (is_root_) argv.emplace_back("--allow-run-as-root");
  if (ranks > cores_) argv.emplace_back("--oversubscribe");
  // Open MPI binds each rank to one core when there are at most 2 ranks. Unbound, as Horovod
  // runs its ranks (-bind-to none): a rank's threads get room, and a rank is not pinned to the
  // core where mpirun and the harness wake up (measured here: the CNN on one bound rank trained
  // 722-817 images/s, unbound 785-867, alternating runs).
  argv.insert(argv.end(), {"--bind-to", "none"});
  // The worker sizes LibTorch's pools from HARNESS_THREADS_PER_RANK; OpenBLAS and OpenMP read
  // their own variables when the library loads, before any code of ours runs.
  for (const char* variable :
       {"HARNESS_THREADS_PER_RANK", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}) {
    argv.insert(argv.end(), {"-x", fmt::format("{}={}", variable, threads)});
  }
  argv.insert(argv.end(), request.worker_argv.begin(), request.worker_argv.end());
  return argv;
}

LaunchOutcome LocalLauncher::launch(const LaunchRequest& request) {
  LaunchOutcome outcome;
  outcome.command = command_for(request);
  outcome.threads_per_rank = resolved_threads_per_rank(request.settings, cores_);
  ProcessRequest process;
  process.argv = outcome.command;
  process.log_path = request.log_path;
  process.timeout_s = request.settings.timeout_s;
  outcome.process = run_process(process);
  return outcome;
}

std::string LocalLauncher::max_ranks_reason() const {
  return fmt::format("the local launcher runs at most {} ranks per core, and this machine has {}",
                     kRanksPerCore, cores_);
}

}  // namespace harness
