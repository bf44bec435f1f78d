// The two MPI families' launchers (harness/launch/mpi_dialect.h): what each is told for the same
// launch, which family a launcher's --version names, and the local launcher's refusals of what
// hydra cannot do.
#include "harness/launch/mpi_dialect.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/mpi_build.h"
#include "harness/common/process.h"
#include "harness/launch/local_scheduler.h"
#include "harness/launch/slurm_scheduler.h"
#include "harness/study/builds.h"

namespace harness {
namespace {

MpiLaunch four_ranks_on_two_hosts(const std::string& launcher) {
  MpiLaunch launch;
  launch.launcher = launcher;
  launch.ranks = 4;
  launch.as_root = true;
  launch.more_ranks_than_slots = true;
  launch.environment = {{"OMP_NUM_THREADS", "1"}, {"HARNESS_X", "a b"}};
  launch.hosts = {{"nodea", 2}, {"nodeb", 2}};
  launch.ssh_connect_timeout_s = 20;
  launch.user_arguments = {"--user-flag"};
  launch.program = {"/opt/harness", "worker"};
  return launch;
}

TEST(MpiDialect, OpenMpisMpirunIsToldEverythingOnItsCommandLine) {
  EXPECT_EQ(mpi_launch_command(MpiFamily::kOpenMpi, four_ranks_on_two_hosts("mpirun")),
            (std::vector<std::string>{"mpirun", "-n", "4", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                      "-x", "OMP_NUM_THREADS=1", "-x", "HARNESS_X=a b", "--host", "nodea:2,nodeb:2",
                                      "--mca", "plm_rsh_args", "-o ConnectTimeout=20 -o BatchMode=yes", "--user-flag",
                                      "/opt/harness", "worker"}));
}

TEST(MpiDialect, HydrasMpiexecNeedsNoRootOrOversubscriptionFlagsAndTakesSshOptionsFromItsEnvironment) {
  EXPECT_EQ(mpi_launch_command(MpiFamily::kMpich, four_ranks_on_two_hosts("/usr/bin/mpiexec.mpich")),
            (std::vector<std::string>{"env", "HYDRA_LAUNCHER_EXTRA_ARGS=-o ConnectTimeout=20 -o BatchMode=yes",
                                      "/usr/bin/mpiexec.mpich", "-n", "4", "-bind-to", "none", "-genv",
                                      "OMP_NUM_THREADS", "1", "-genv", "HARNESS_X", "a b", "-hosts",
                                      "nodea:2,nodeb:2", "--user-flag", "/opt/harness", "worker"}));
  MpiLaunch here;
  here.launcher = "mpiexec";
  here.ranks = 2;
  here.program = {"/opt/harness", "worker"};
  EXPECT_EQ(mpi_launch_command(MpiFamily::kMpich, here),
            (std::vector<std::string>{"mpiexec", "-n", "2", "-bind-to", "none", "/opt/harness", "worker"}));
  // What hydra cannot be told is refused, not left out.
  here.idle_ranks_yield = true;
  EXPECT_THROW(mpi_launch_command(MpiFamily::kMpich, here), LaunchError);
  here.idle_ranks_yield = false;
  here.simulated_host_agent = {"/opt/harness", "simulated-node"};
  EXPECT_THROW(mpi_launch_command(MpiFamily::kMpich, here), LaunchError);
}

TEST(MpiDialect, ALaunchersVersionNamesItsFamily) {
  // As printed on Debian 12 by mpirun.openmpi --version and mpiexec.mpich --version.
  EXPECT_EQ(launcher_family_from_version("mpirun (Open MPI) 4.1.4\n\nReport bugs to "
                                         "http://www.open-mpi.org/community/help/\n"),
            MpiFamily::kOpenMpi);
  EXPECT_EQ(launcher_family_from_version("HYDRA build details:\n    Version:                                 4.0.2\n"),
            MpiFamily::kMpich);
  EXPECT_EQ(launcher_family_from_version("Intel(R) MPI Library for Linux* OS, Version 2021.10"), MpiFamily::kMpich);
  EXPECT_EQ(launcher_family_from_version("#!/bin/sh wrapper said nothing"), std::nullopt);
  EXPECT_EQ(mpi_family_named("mpich"), MpiFamily::kMpich);
  EXPECT_EQ(mpi_family_named("lam"), std::nullopt);
}

TEST(MpiDialect, TheBuildKnowsItsMpi) {
  const MpiBuild& build = mpi_build();
  ASSERT_TRUE(mpi_family_named(build.family).has_value()) << build.family;
  EXPECT_NE(build.library, "unknown");
  // Open MPI says so; the MPICH family's libraries name themselves (MPICH, MVAPICH2, Intel(R) MPI).
  if (build.family == "openmpi") {
    EXPECT_NE(build.library.find("Open MPI"), std::string::npos) << build.library;
  }
  EXPECT_EQ(describe_mpi_build().rfind("MPI: " + build.library + " (family " + build.family, 0), 0U)
      << describe_mpi_build();
}

JobSpec two_ranks() {
  JobSpec job;
  job.ranks = 2;
  job.argv = {"/opt/harness", "worker"};
  return job;
}

TEST(MpiDialect, TheLocalLauncherSpeaksItsBuildsFamily) {
  const auto argv = LocalScheduler({}, 2, true, {}, MpiFamily::kMpich).command_for(two_ranks());
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 5),
            (std::vector<std::string>{"mpiexec", "-n", "2", "-bind-to", "none"}));
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--allow-run-as-root"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "HARNESS_THREADS_PER_RANK"), argv.end());
}

TEST(MpiDialect, OpenMpisOptionsAreRefusedUnderHydraInOneLine) {
  LocalOptions mca;
  mca.mpirun_args = {"--mca", "btl", "self,vader"};
  try {
    LocalScheduler(mca, 2, true, {}, MpiFamily::kMpich).check_available();
    FAIL() << "--mca under hydra";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("launcher.mpirun_args[0]: \"--mca\" is Open MPI's mpirun's", 0), 0U)
        << error.what();
  }
}

// Hydra runs its agent as one word: harness-simulated-node, beside the harness whose ranks it
// starts; and it is told nothing of yielding (MPICH's ch4:ucx would not listen).
TEST(MpiDialect, HydraEntersSimulatedHostsThroughTheAgentBesideTheHarness) {
  LocalOptions simulated;
  simulated.hosts = {"nodea", "nodeb"};
  simulated.simulate_hosts = true;
  JobSpec job = two_ranks();
  job.ranks = 4;  // more than the 2 cores: Open MPI's ranks would be told to yield
  job.nodes = 2;
  const auto hydra = LocalScheduler(simulated, 2, true, {}, MpiFamily::kMpich).command_for(job);
  const auto has_words = [](const std::vector<std::string>& argv, const std::vector<std::string>& words) {
    return std::search(argv.begin(), argv.end(), words.begin(), words.end()) != argv.end();
  };
  EXPECT_TRUE(has_words(hydra, {"-hosts", "nodea:2,nodeb:2"}));
  EXPECT_TRUE(has_words(hydra, {"-launcher", "rsh", "-launcher-exec", "/opt/harness-simulated-node", "-iface", "lo"}));
  EXPECT_TRUE(has_words(hydra, {"-genv", "GLOO_SOCKET_IFNAME", "lo"}));
  const auto open_mpi = LocalScheduler(simulated, 2, true, {}, MpiFamily::kOpenMpi).command_for(job);
  EXPECT_NE(std::find(open_mpi.begin(), open_mpi.end(), "/opt/harness simulated-node"), open_mpi.end());
  EXPECT_NE(std::find(open_mpi.begin(), open_mpi.end(), "mpi_yield_when_idle"), open_mpi.end());
  // This test's binary has no agent beside it: refused before any launch, naming what is missing.
  try {
    LocalScheduler(simulated, 2, true, {}, MpiFamily::kMpich).check_available();
    FAIL() << "no harness-simulated-node beside the test binary";
  } catch (const LaunchError& error) {
    EXPECT_NE(std::string(error.what()).find("harness-simulated-node not found"), std::string::npos) << error.what();
  }
}

// Under SLURM, MPICH's ranks start with srun --mpi=pmi2 (SLURM's pmi2 plugin serves the PMI-1 wire
// protocol of Debian's hydra-built MPICH), or with hydra's mpiexec, which reads the allocation;
// Open MPI's with --mpi=pmix. Run on the test cluster: tests/slurm/mpich_slurm_test.sh.
TEST(MpiDialect, SlurmStartsEachFamilysRanksAsItsMpiNeeds) {
  JobSpec job = two_ranks();
  job.ranks = 4;
  job.nodes = 2;
  job.ranks_per_node = 2;
  const auto has = [](const std::vector<std::string>& argv, const std::string& word) {
    return std::find(argv.begin(), argv.end(), word) != argv.end();
  };
  const auto srun = [&](MpiFamily family) {
    return SlurmScheduler({}, "launcher", ClusterConfig{}, RankStarter::kSrun, family).command_for(job);
  };
  EXPECT_TRUE(has(srun(MpiFamily::kMpich), "--mpi=pmi2"));
  EXPECT_TRUE(has(srun(MpiFamily::kOpenMpi), "--mpi=pmix"));
  // A site's own plugin (HPE Cray EX's cray_shasta), whatever the family.
  SlurmOptions cray;
  cray.srun_mpi = "cray_shasta";
  EXPECT_TRUE(has(SlurmScheduler(cray, "launcher", ClusterConfig{}, RankStarter::kSrun, MpiFamily::kMpich).command_for(job),
                  "--mpi=cray_shasta"));
  // A named build of the other family in a two-build sweep starts as its own MPI needs.
  job.mpi_family = "mpich";
  EXPECT_TRUE(has(srun(MpiFamily::kOpenMpi), "--mpi=pmi2"));
  job.mpi_family = "";

  const auto hydra = SlurmScheduler({}, "launcher", ClusterConfig{}, RankStarter::kMpirun, MpiFamily::kMpich)
                         .command_for(job);
  EXPECT_NE(hydra.front().find("mpiexec"), std::string::npos) << hydra.front();
  const std::vector<std::string> layout = {"-n", "4", "-ppn", "2", "-bind-to", "none", "/opt/harness", "worker"};
  EXPECT_TRUE(std::equal(layout.begin(), layout.end(), hydra.begin() + 1)) << fmt::format("{}", fmt::join(hydra, " "));
  EXPECT_FALSE(has(hydra, "-x"));  // hydra passes the job script's environment on by itself

  // Inside an allocation, the local launcher's srun too; without the plugin, MPICH's ranks could
  // not find each other: refused before any starts.
  Allocation allocation;
  allocation.job_id = "42";
  allocation.nodes = 2;
  EXPECT_TRUE(has(LocalScheduler({}, 2, true, allocation, MpiFamily::kMpich).command_for(job), "--mpi=pmi2"));
  allocation.srun_has_mpi_plugin = false;
  EXPECT_THROW(LocalScheduler({}, 2, true, allocation, MpiFamily::kMpich).check_available(), LaunchError);
  EXPECT_NO_THROW(LocalScheduler({}, 2, true, allocation, MpiFamily::kOpenMpi).check_available());
}

// A two-build sweep (--build openmpi=... --build mpich=...): each build's --version names its MPI,
// and the local launcher starts its points with that family's launcher, the one its configure found.
TEST(MpiDialect, EachBuildOfATwoBuildSweepStartsWithItsOwnMpisLauncher) {
  const std::string schema = R"({"$defs": {"settings": {"properties": {}}}})";
  const BuildFacts mpich = parse_build_facts(
      "harness 0.3.0 (559560a1b2c3)\nMPI: MPICH Version: 4.0.2 (family mpich, launcher /usr/bin/mpiexec.mpich)\n"
      "resources: /opt (installed)\n",
      schema, "--build mpich");
  EXPECT_EQ(mpich.mpi_family, "mpich");
  EXPECT_EQ(mpich.mpi_launcher, "/usr/bin/mpiexec.mpich");
  const BuildFacts older = parse_build_facts("harness 0.3.0 (36fd8b66df3b)\nresources: /opt (installed)\n", schema, "b");
  EXPECT_EQ(older.mpi_family, "");  // built before the line: the running harness's launcher
  JobSpec job = two_ranks();
  job.mpi_family = mpich.mpi_family;
  job.mpi_launcher = mpich.mpi_launcher;
  const auto argv = LocalScheduler({}, 2, true).command_for(job);  // an Open MPI harness
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 5),
            (std::vector<std::string>{"/usr/bin/mpiexec.mpich", "-n", "2", "-bind-to", "none"}));
  job.mpi_family = "openmpi";
  job.mpi_launcher = "/usr/bin/mpirun.openmpi";
  EXPECT_EQ(LocalScheduler({}, 2, true).command_for(job).front(), "mpirun");  // its own family: its own launcher
}

// Speaking hydra's dialect where the launchers on PATH and configure's are Open MPI's (an Open MPI
// build on a machine whose plain mpiexec is Open MPI's, as Debian's is): refused before any rank
// starts, naming the launcher and both families.
TEST(MpiDialect, ALauncherOfTheOtherFamilyIsRefusedBeforeAnyRankStarts) {
  if (build_mpi_family() != MpiFamily::kOpenMpi) GTEST_SKIP() << "an Open MPI build's launchers";
  ProcessRequest version;
  version.argv = {"mpiexec", "--version"};
  version.timeout_s = 10;
  if (find_program("mpiexec").empty() ||
      launcher_family_from_version(run_captured(version).output) != MpiFamily::kOpenMpi) {
    GTEST_SKIP() << "mpiexec on PATH is not Open MPI's";
  }
  try {
    LocalScheduler({}, 2, true, {}, MpiFamily::kMpich).check_available();
    FAIL() << "hydra's dialect to Open MPI's mpiexec";
  } catch (const LaunchError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("mpiexec is Open MPI's mpirun, but this harness is built against"), std::string::npos)
        << message;
    EXPECT_NE(message.find("(mpich): put mpich's launcher on PATH"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace harness
