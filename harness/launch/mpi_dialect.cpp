#include "harness/launch/mpi_dialect.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/mpi_build.h"
#include "harness/common/process.h"

namespace harness {

std::optional<MpiFamily> mpi_family_named(std::string_view name) {
  if (name == "openmpi") return MpiFamily::kOpenMpi;
  if (name == "mpich") return MpiFamily::kMpich;
  return std::nullopt;
}

std::string_view mpi_family_name(MpiFamily family) { return family == MpiFamily::kOpenMpi ? "openmpi" : "mpich"; }

std::string_view mpi_launcher_description(MpiFamily family) {
  return family == MpiFamily::kOpenMpi ? "Open MPI's mpirun" : "hydra's mpiexec (MPICH)";
}

MpiFamily build_mpi_family() {
  // Configure refuses any other (cmake/mpi_flavour.cmake).
  return mpi_family_named(mpi_build().family).value_or(MpiFamily::kOpenMpi);
}

namespace {

std::string host_list(const std::vector<std::pair<std::string, int>>& hosts) {
  std::string list;
  for (const auto& [host, ranks] : hosts) list += fmt::format("{}{}:{}", list.empty() ? "" : ",", host, ranks);
  return list;
}

std::string joined_words(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

std::vector<std::string> open_mpi_command(const MpiLaunch& launch) {
  std::vector<std::string> argv = {launch.launcher, "-n", std::to_string(launch.ranks)};
  if (launch.as_root) argv.emplace_back("--allow-run-as-root");
  // Open MPI counts a slot per physical core it may use and refuses more ranks than slots
  // without this.
  if (launch.more_ranks_than_slots) argv.emplace_back("--oversubscribe");
  argv.insert(argv.end(), {"--bind-to", "none"});
  for (const auto& [key, value] : launch.environment) argv.insert(argv.end(), {"-x", key + "=" + value});
  if (!launch.hosts.empty()) argv.insert(argv.end(), {"--host", host_list(launch.hosts)});
  if (!launch.simulated_host_agent.empty()) {
    // Through rsh's launcher by name: where another is configured (images that set
    // OMPI_MCA_plm=isolated, which launches no daemon), mpirun would start nothing on the hosts
    // and report them full. Between simulated hosts only the loopback exists.
    argv.insert(argv.end(), {"--mca", "plm", "rsh", "--mca", "plm_rsh_agent", joined_words(launch.simulated_host_agent),
                             "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"});
  }
  if (launch.idle_ranks_yield) argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  if (launch.ssh_connect_timeout_s > 0) {
    argv.insert(argv.end(), {"--mca", "plm_rsh_args",
                             fmt::format("-o ConnectTimeout={} -o BatchMode=yes", launch.ssh_connect_timeout_s)});
  }
  argv.insert(argv.end(), launch.user_arguments.begin(), launch.user_arguments.end());
  argv.insert(argv.end(), launch.program.begin(), launch.program.end());
  return argv;
}

std::vector<std::string> hydra_command(const MpiLaunch& launch) {
  std::vector<std::string> argv;
  // Hydra takes ssh's options from its environment only.
  if (launch.ssh_connect_timeout_s > 0) {
    argv = {"env", fmt::format("HYDRA_LAUNCHER_EXTRA_ARGS=-o ConnectTimeout={} -o BatchMode=yes",
                               launch.ssh_connect_timeout_s)};
  }
  // Hydra runs as root, and places any number of ranks on a host, without being asked.
  argv.insert(argv.end(), {launch.launcher, "-n", std::to_string(launch.ranks), "-bind-to", "none"});
  for (const auto& [key, value] : launch.environment) argv.insert(argv.end(), {"-genv", key, value});
  if (!launch.hosts.empty()) argv.insert(argv.end(), {"-hosts", host_list(launch.hosts)});
  if (!launch.simulated_host_agent.empty()) {
    // Hydra runs -launcher-exec as one program (its words are not split), with the host and the
    // proxy's command after it, as it would run rsh; and its proxies reach mpiexec over the
    // loopback, the one interface between simulated hosts.
    if (launch.simulated_host_agent.size() != 1) {
      throw LaunchError("hydra's -launcher-exec takes one program: the simulated hosts' agent must be a single word");
    }
    argv.insert(argv.end(), {"-launcher", "rsh", "-launcher-exec", launch.simulated_host_agent.front(), "-iface", "lo"});
  }
  if (launch.idle_ranks_yield) {
    throw LaunchError("hydra's MPICH has no counterpart of Open MPI's mpi_yield_when_idle: with more ranks than cores "
                      "on simulated hosts, waiting ranks would starve the ones they wait for");
  }
  argv.insert(argv.end(), launch.user_arguments.begin(), launch.user_arguments.end());
  argv.insert(argv.end(), launch.program.begin(), launch.program.end());
  return argv;
}

}  // namespace

std::vector<std::string> mpi_launch_command(MpiFamily family, const MpiLaunch& launch) {
  return family == MpiFamily::kOpenMpi ? open_mpi_command(launch) : hydra_command(launch);
}

std::optional<MpiFamily> launcher_family_from_version(std::string_view version_output) {
  if (version_output.find("(Open MPI)") != std::string_view::npos ||
      version_output.find("(OpenRTE)") != std::string_view::npos) {
    return MpiFamily::kOpenMpi;
  }
  if (version_output.find("HYDRA build details") != std::string_view::npos ||
      version_output.find("Intel(R) MPI Library") != std::string_view::npos) {
    return MpiFamily::kMpich;
  }
  return std::nullopt;
}

std::string_view srun_mpi_plugin(MpiFamily family) { return family == MpiFamily::kOpenMpi ? "pmix" : "pmi2"; }

std::string usual_launcher(MpiFamily family) { return family == MpiFamily::kOpenMpi ? "mpirun" : "mpiexec"; }

std::string build_launcher() {
  const std::string& configured = mpi_build().launcher;
  std::error_code error;
  if (!configured.empty() && std::filesystem::is_regular_file(configured, error)) return configured;
  const std::string usual = usual_launcher(build_mpi_family());
  return find_program(usual).empty() ? "" : usual;
}

namespace {

// What `launcher --version` says of its family; nullopt when it cannot be run or does not say.
std::optional<MpiFamily> probed_family(const std::string& launcher) {
  ProcessRequest request;
  request.argv = {launcher, "--version"};
  request.timeout_s = 10;
  request.stop_on_interrupt = false;
  try {
    return launcher_family_from_version(run_captured(std::move(request)).output);
  } catch (const LaunchError&) {
    return std::nullopt;
  }
}

}  // namespace

std::string launcher_of_family(MpiFamily family, const std::string& launcher) {
  const std::optional<MpiFamily> found = probed_family(launcher);
  if (!found || *found == family) return launcher;
  const std::string configured = build_launcher();
  if (!configured.empty() && configured != launcher && probed_family(configured) == family) return configured;
  throw LaunchError(fmt::format("{} is {}, but this harness is built against {} ({}): put {}'s launcher on PATH, or "
                                "build the harness against the MPI of this launcher (-DHARNESS_MPI={}, docs/mpi.md)",
                                find_program(launcher), mpi_launcher_description(*found), mpi_build().library,
                                mpi_family_name(family), mpi_family_name(family), mpi_family_name(*found)));
}

}  // namespace harness
