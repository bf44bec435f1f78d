#include "harness/launch/local_scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/process.h"
#include "harness/study/experiment.h"

namespace harness {
namespace {

bool has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

JobSpec job(int ranks, int threads_per_rank = 0) {
  JobSpec job;
  job.ranks = ranks;
  job.threads_per_rank = threads_per_rank;
  job.argv = {"/opt/harness", "worker", "--output", "x.json"};
  return job;
}

TEST(LocalScheduler, OneRankOnTwoCoresGetsTwoUnboundThreads) {
  const auto argv = LocalScheduler({}, 2, false).command_for(job(1));
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 3),
            (std::vector<std::string>{"mpirun", "-n", "1"}));
  EXPECT_FALSE(has(argv, "--allow-run-as-root"));
  EXPECT_FALSE(has(argv, "--oversubscribe"));
  EXPECT_TRUE(has(argv, "--bind-to"));
  EXPECT_TRUE(has(argv, "OPENBLAS_NUM_THREADS=2"));
  EXPECT_TRUE(has(argv, "HARNESS_THREADS_PER_RANK=2"));
  // The rank program comes last, unchanged.
  EXPECT_EQ(std::vector<std::string>(argv.end() - 4, argv.end()), job(1).argv);
}

TEST(LocalScheduler, RanksAreNeverBoundToOneCore) {
  const auto argv = LocalScheduler({}, 2, false).command_for(job(2));
  EXPECT_TRUE(has(argv, "--bind-to"));
  EXPECT_TRUE(has(argv, "none"));
  EXPECT_FALSE(has(argv, "--oversubscribe"));
  EXPECT_TRUE(has(argv, "OMP_NUM_THREADS=1"));
}

TEST(LocalScheduler, MoreRanksThanCoresOversubscribe) {
  const auto argv = LocalScheduler({}, 2, true).command_for(job(4));
  EXPECT_TRUE(has(argv, "--oversubscribe"));
  EXPECT_TRUE(has(argv, "--allow-run-as-root"));
  EXPECT_TRUE(has(argv, "--bind-to"));
}

TEST(LocalScheduler, RanksOutnumberingTheCoresAreWarnedAboutBeforeTheSweep) {
  JobSpec four = job(4);
  four.name = "p001-x";
  JobSpec two = job(2);
  two.name = "p000-x";
  const std::string caution = LocalScheduler({}, 2, false).caution({two, four});
  EXPECT_EQ(caution,
            "oversubscribed: 1 point(s) run more rank threads than this machine's 2 cores: p001-x (4 ranks × 1 "
            "thread on 2 cores); their compute time includes waiting for a core");
  EXPECT_EQ(LocalScheduler({}, 2, false).caution({two}), "");
  EXPECT_NE(LocalScheduler({}, 4, false).caution({job(2, 3)}).find("(2 ranks × 3 threads on 4 cores)"),
            std::string::npos);
}

// A machine of 8 CPUs that are 4 cores' hyperthreads: threads run on all 8, but Open MPI counts
// 4 slots and refuses a fifth rank without --oversubscribe.
TEST(LocalScheduler, MoreRanksThanPhysicalCoresOversubscribe) {
  UsableCpus hyperthreaded;
  hyperthreaded.cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  hyperthreaded.online = 8;
  hyperthreaded.physical_cores = 4;
  const LocalScheduler scheduler({}, hyperthreaded, false);
  EXPECT_FALSE(has(scheduler.command_for(job(4)), "--oversubscribe"));
  EXPECT_TRUE(has(scheduler.command_for(job(5)), "--oversubscribe"));
  EXPECT_TRUE(has(scheduler.command_for(job(8)), "--oversubscribe"));
  EXPECT_TRUE(has(scheduler.command_for(job(1)), "HARNESS_THREADS_PER_RANK=8"));
  EXPECT_EQ(scheduler.caution({job(8)}), "");  // 8 threads on 8 CPUs
}

// A quota of 2 CPUs' worth on 4 CPUs: 2 cores to size threads and warn by, and the limit says why.
TEST(LocalScheduler, ACgroupQuotaIsTheCoresTheRanksGet) {
  UsableCpus limited;
  limited.cpus = {0, 1, 2, 3};
  limited.online = 4;
  limited.physical_cores = 4;
  limited.quota = CpuQuota{2, "/sys/fs/cgroup/job/cpu.max"};
  const LocalScheduler scheduler({}, limited, false);
  EXPECT_TRUE(has(scheduler.command_for(job(1)), "HARNESS_THREADS_PER_RANK=2"));
  EXPECT_FALSE(has(scheduler.command_for(job(4)), "--oversubscribe"));  // mpirun has 4 slots
  JobSpec four = job(4);
  four.name = "p001-x";
  EXPECT_EQ(scheduler.caution({four}),
            "oversubscribed: 1 point(s) run more rank threads than this machine's 2 cores (cgroup CPU quota of 2 "
            "CPUs (/sys/fs/cgroup/job/cpu.max)): p001-x (4 ranks × 1 thread on 2 cores); their compute time includes "
            "waiting for a core");
  EXPECT_EQ(scheduler.limits().max_ranks, 16);
  EXPECT_NE(scheduler.limits().why.find("this machine has 2 cores (cgroup CPU quota of 2 CPUs"), std::string::npos);
}

TEST(LocalScheduler, RanksSharingAGpuWithoutMpsAreWarnedAboutWithTheCost) {
  JobSpec shared = job(2);
  shared.name = "p001-x";
  shared.gpus_per_node = 2;  // device "cuda": a GPU per rank wanted
  JobSpec alone = job(1);
  alone.name = "p000-x";
  alone.gpus_per_node = 1;
  const std::string caution = shared_gpu_caution({alone, shared}, 1, false);
  EXPECT_NE(caution.find("ranks share a GPU without MPS in 1 point(s) (p001-x)"), std::string::npos) << caution;
  EXPECT_NE(caution.find("550 us"), std::string::npos) << caution;
  EXPECT_NE(caution.find("nvidia-cuda-mps-control -d"), std::string::npos) << caution;
  EXPECT_EQ(shared_gpu_caution({alone, shared}, 1, true), "");   // MPS runs
  EXPECT_EQ(shared_gpu_caution({alone, shared}, 2, false), "");  // a GPU each
  EXPECT_EQ(shared_gpu_caution({job(4)}, 1, false), "");         // on the CPU
}

TEST(LocalScheduler, ExplicitThreadsOverrideTheDefault) {
  const LocalScheduler scheduler({}, 8, false);
  EXPECT_TRUE(has(scheduler.command_for(job(2, 3)), "OPENBLAS_NUM_THREADS=3"));
  EXPECT_EQ(scheduler.threads_per_rank(job(2, 3)), 3);
  EXPECT_EQ(scheduler.threads_per_rank(job(2)), 4);
}

TEST(LocalScheduler, MpirunArgumentsGoBeforeTheRankProgram) {
  LocalOptions options;
  options.mpirun_args = {"--mca", "btl", "self,vader"};
  const auto argv = LocalScheduler(options, 2, false).command_for(job(2));
  const auto mca = std::find(argv.begin(), argv.end(), "--mca");
  const auto program = std::find(argv.begin(), argv.end(), "/opt/harness");
  ASSERT_NE(mca, argv.end());
  EXPECT_LT(mca, program);
}

TEST(LocalScheduler, OnePointAtATimeUnlessAskedAndThenItWarns) {
  EXPECT_EQ(LocalScheduler({}, 2, false).max_parallel(), 1);
  EXPECT_EQ(LocalScheduler({}, 2, false).caution({}), "");
  LocalOptions options;
  options.max_parallel = 3;
  const LocalScheduler parallel(options, 2, false);
  EXPECT_EQ(parallel.max_parallel(), 3);
  EXPECT_NE(parallel.caution({}).find("share this machine's 2 cores"), std::string::npos) << parallel.caution({});
}

TEST(LocalScheduler, RefusesJobsOnSeveralNodes) {
  LocalScheduler scheduler({}, 2, false);
  JobSpec two_nodes = job(2);
  two_nodes.name = "p000-x";
  two_nodes.nodes = 2;
  try {
    scheduler.submit(two_nodes);
    FAIL() << "a two-node job was accepted";
  } catch (const LaunchError& error) {
    EXPECT_NE(std::string(error.what()).find("the local launcher has 1 node(s), and the job asks for 2"), std::string::npos)
        << error.what();
  }
}

TEST(LocalScheduler, LimitsRanksPerCore) {
  const ResourceLimits limits = LocalScheduler({}, 2, false).limits();
  EXPECT_EQ(limits.max_ranks, 16);
  EXPECT_NE(limits.why.find("8 ranks per core"), std::string::npos) << limits.why;
}

// The launcher of an experiment file: a name or an object, options checked like settings.
std::string launcher_error(const std::string& launcher) {
  try {
    const Experiment experiment = parse_experiment(
        R"({"name": "x", "launcher": )" + launcher + R"(, "settings": {"workload": "iris_mlp"}})", "exp.json");
    make_scheduler(experiment.launcher);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

std::string value_after(const std::vector<std::string>& argv, const std::string& flag) {
  const auto found = std::find(argv.begin(), argv.end(), flag);
  return found == argv.end() || found + 1 == argv.end() ? "" : *(found + 1);
}

TEST(LocalScheduler, HostsTakeTheRanksOfAPointsNodesInOrder) {
  LocalOptions options;
  options.hosts = {"a", "b", "c"};
  const LocalScheduler scheduler(options, 2, false);
  JobSpec spread = job(5);
  spread.nodes = 2;  // as evenly as possible, the first host one more
  EXPECT_EQ(value_after(scheduler.command_for(spread), "--host"), "a:3,b:2");
  spread.ranks = 6;
  spread.nodes = 3;
  spread.ranks_per_node = 2;
  EXPECT_EQ(value_after(scheduler.command_for(spread), "--host"), "a:2,b:2,c:2");
  EXPECT_EQ(value_after(scheduler.command_for(job(2)), "--host"), "a:2");  // one node by default
  // Real hosts: mpirun's own ssh, no simulation.
  EXPECT_FALSE(has(scheduler.command_for(spread), "plm_rsh_agent"));
  EXPECT_EQ(scheduler.limits().max_nodes, 3);
  EXPECT_NE(scheduler.limits().nodes_why.find("lists 3 host(s)"), std::string::npos);
  JobSpec too_many = job(4);
  too_many.nodes = 4;
  EXPECT_THROW(LocalScheduler(options, 2, false).submit(too_many), LaunchError);
}

// A host that does not answer held mpirun (and the point) until its timeout_s, while ssh waited on
// TCP: ssh gets a connect timeout, unless the user chose how mpirun reaches its hosts.
TEST(LocalScheduler, SshToRealHostsGivesUpOnAHostThatDoesNotAnswer) {
  if (find_program("ssh").empty()) GTEST_SKIP() << "no ssh: Open MPI would use rsh, which takes no -o";
  if (std::getenv("OMPI_MCA_plm_rsh_agent") != nullptr || std::getenv("OMPI_MCA_plm_rsh_args") != nullptr) {
    GTEST_SKIP() << "this environment configures mpirun's remote shell itself";
  }
  LocalOptions options;
  options.hosts = {"a", "b"};
  JobSpec spread = job(4);
  spread.nodes = 2;
  EXPECT_EQ(value_after(LocalScheduler(options, 2, false).command_for(spread), "plm_rsh_args"),
            fmt::format("-o ConnectTimeout={} -o BatchMode=yes", kSshConnectTimeoutS));
  for (const std::vector<std::string>& chosen : {std::vector<std::string>{"--mca", "plm_rsh_agent", "rsh"},
                                                 std::vector<std::string>{"--mca", "plm_rsh_args", "-p 2222"}}) {
    options.mpirun_args = chosen;
    const auto argv = LocalScheduler(options, 2, false).command_for(spread);
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "plm_rsh_args"), chosen[1] == "plm_rsh_args" ? 1 : 0);
  }
  ::setenv("OMPI_MCA_plm_rsh_agent", "rsh", 1);
  options.mpirun_args.clear();
  EXPECT_FALSE(has(LocalScheduler(options, 2, false).command_for(spread), "plm_rsh_args"));
  ::unsetenv("OMPI_MCA_plm_rsh_agent");
  // This machine's own ranks and simulated hosts need no ssh.
  EXPECT_FALSE(has(LocalScheduler({}, 2, false).command_for(spread), "plm_rsh_args"));
  options.simulate_hosts = true;
  EXPECT_FALSE(has(LocalScheduler(options, 2, true).command_for(spread), "plm_rsh_args"));
}

TEST(LocalScheduler, SimulatedHostsRunThroughTheHarnessAsRshAgentOverTheLoopback) {
  LocalOptions options;
  options.hosts = {"nodea", "nodeb"};
  options.simulate_hosts = true;
  JobSpec spread = job(4);
  spread.nodes = 2;
  const auto argv = LocalScheduler(options, 2, true).command_for(spread);
  EXPECT_EQ(value_after(argv, "--host"), "nodea:2,nodeb:2");
  EXPECT_EQ(value_after(argv, "plm"), "rsh");
  EXPECT_EQ(value_after(argv, "plm_rsh_agent"), "/opt/harness simulated-node");
  EXPECT_EQ(value_after(argv, "btl_tcp_if_include"), "lo");
  EXPECT_EQ(value_after(argv, "oob_tcp_if_include"), "lo");
  EXPECT_TRUE(has(argv, "GLOO_SOCKET_IFNAME=lo"));
  // 4 ranks on 2 cores: MPI must yield while it waits, which mpirun cannot see from the slots.
  EXPECT_EQ(value_after(argv, "mpi_yield_when_idle"), "1");
  EXPECT_FALSE(has(LocalScheduler(options, 4, true).command_for(spread), "mpi_yield_when_idle"));
  // Set in mpirun_args, it is not given twice (mpirun refuses that).
  options.mpirun_args = {"--mca", "mpi_yield_when_idle", "0"};
  const auto user_set = LocalScheduler(options, 2, true).command_for(spread);
  EXPECT_EQ(std::count(user_set.begin(), user_set.end(), "mpi_yield_when_idle"), 1);
  EXPECT_EQ(value_after(user_set, "mpi_yield_when_idle"), "0");
}

TEST(SchedulerTable, LauncherIsANameOrAnObjectWithOptions) {
  EXPECT_EQ(launcher_error(R"("local")"), "");
  EXPECT_EQ(launcher_error(R"({"name": "local", "max_parallel": 2, "mpirun_args": ["-v"]})"), "");
  EXPECT_EQ(launcher_error(R"("locl")"),
            "exp.json: launcher: unknown launcher \"locl\" (did you mean \"local\"?)");
  EXPECT_EQ(launcher_error(R"({"name": "local", "max_paralel": 2})"),
            "exp.json: launcher.max_paralel: unknown option \"max_paralel\" (did you mean \"max_parallel\"?)");
  EXPECT_NE(launcher_error(R"({"name": "local", "max_parallel": 0})")
                .find("exp.json: launcher.max_parallel: expected an integer from 1 to 64"),
            std::string::npos);
  EXPECT_NE(launcher_error(R"({"max_parallel": 2})").find("exp.json: launcher: expected a launcher name"),
            std::string::npos);
  EXPECT_EQ(launcher_error(R"("slurmm")"),
            "exp.json: launcher: unknown launcher \"slurmm\" (did you mean \"slurm\"?)");
  EXPECT_EQ(launcher_error(R"("pbs")"), "exp.json: launcher: unknown launcher \"pbs\" (expected one of: local, slurm)");
  EXPECT_EQ(launcher_error(R"({"name": "local", "hosts": ["a", "b"], "simulate_hosts": true})"), "");
  EXPECT_EQ(launcher_error(R"({"name": "local", "simulate_hosts": true})"),
            "exp.json: launcher.simulate_hosts: expected the hosts to simulate in option \"hosts\", got none");
  EXPECT_NE(launcher_error(R"({"name": "local", "hosts": ["a", "a"]})")
                .find("exp.json: launcher.hosts[1]: expected a host not listed before"),
            std::string::npos);
  EXPECT_NE(launcher_error(R"({"name": "local", "hosts": ["a:2"]})").find("exp.json: launcher.hosts[0]: expected a host name"),
            std::string::npos);
  EXPECT_NE(launcher_error(R"({"name": "local", "hosts": []})").find("expected a non-empty list"), std::string::npos);
}

// Hosts go to mpirun --host and on to ssh: anything but a host name is refused before launch
// (once only space, tab, comma and colon were, and each point failed with mpirun's exit code 255).
TEST(SchedulerTable, HostsMustBeHostNames) {
  for (const std::string& bad : {std::string("a;b"), std::string("a\\nb"), std::string("n\u00f6de"),
                                 std::string(300, 'a'), std::string("-oProxyCommand=touch /tmp/x"), std::string("-a"),
                                 std::string("a-"), std::string("a..b"), std::string(".a"), std::string("a b"),
                                 std::string("a:2"), std::string(64, 'a'), std::string("$(id)")}) {
    const std::string text = launcher_error(R"({"name": "local", "hosts": ["ok", ")" + bad + R"("]})");
    EXPECT_EQ(text.rfind("exp.json: launcher.hosts[1]: expected a host name", 0), 0U) << bad << ": " << text;
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    EXPECT_LT(text.size(), 300U) << text;
  }
  EXPECT_NE(launcher_error(R"({"name": "local", "hosts": ["a\nb"]})").find(R"(got "a\nb")"), std::string::npos);
  for (const std::string& good : {std::string("node-1"), std::string("10.0.0.1"), std::string("a.example.org"),
                                  std::string("A1"), std::string(63, 'a') + ".b"}) {
    EXPECT_EQ(launcher_error(R"({"name": "local", "hosts": [")" + good + R"("]})"), "") << good;
  }
  std::string longest;
  while (longest.size() + 64 <= 253) longest += std::string(63, 'a') + ".";
  longest += std::string(253 - longest.size(), 'b');
  EXPECT_EQ(launcher_error(R"({"name": "local", "hosts": [")" + longest + R"("]})"), "");
}

// Simulated hosts are UTS namespaces: without root, `harness run` stops before the first point
// instead of every point failing with mpirun's exit code 2 (the reason only in its log).
TEST(LocalScheduler, SimulatedHostsWithoutRootAreRefusedBeforeLaunch) {
  LocalOptions options;
  options.hosts = {"nodea", "nodeb"};
  options.simulate_hosts = true;
  std::string text;
  try {
    LocalScheduler(options, 2, /*is_root=*/false).check_available();
  } catch (const ConfigError& error) {  // bad input: `harness run` exits 2
    text = error.what();
  }
  EXPECT_NE(text.find("launcher.simulate_hosts: simulated hosts need root"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  options.simulate_hosts = false;  // real hosts need no root
  EXPECT_NO_THROW(LocalScheduler(options, 2, false).check_available());
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

// `harness run` inside an sbatch script or salloc: srun starts the ranks on the allocation.
TEST(LocalScheduler, InsideASlurmAllocationSrunStartsTheRanks) {
  Allocation allocation;
  allocation.job_id = "42";
  allocation.nodes = 2;
  allocation.tasks = 2;
  const LocalScheduler scheduler({}, 2, true, allocation);
  JobSpec spread = job(4);
  spread.nodes = 2;
  spread.ranks_per_node = 2;
  const auto argv = scheduler.command_for(spread);
  const auto srun = std::find(argv.begin(), argv.end(), "srun");
  ASSERT_NE(srun, argv.end());
  EXPECT_EQ(argv.front(), "env");
  EXPECT_TRUE(has(argv, "--nodes=2"));
  EXPECT_TRUE(has(argv, "--ntasks=4"));
  EXPECT_TRUE(has(argv, "--ntasks-per-node=2"));
  EXPECT_TRUE(has(argv, "--mpi=pmix"));
  EXPECT_TRUE(has(argv, "--overcommit"));  // 4 ranks in an allocation of 2 tasks
  EXPECT_FALSE(has(argv, "mpirun"));
  EXPECT_EQ(scheduler.limits().max_nodes, 2);
  EXPECT_NE(scheduler.limits().nodes_why.find("allocation 42"), std::string::npos);
  // Outside one, a single node.
  EXPECT_EQ(LocalScheduler({}, 2, false).limits().max_nodes, 1);
}

// In an allocation of several nodes, each node's ranks share that node's CPUs
// (SLURM_JOB_CPUS_PER_NODE), not this machine's, nor each other's.
TEST(LocalScheduler, InsideASlurmAllocationEachNodesOwnCpusCount) {
  Allocation allocation;
  allocation.job_id = "42";
  allocation.nodes = 2;
  allocation.tasks = 16;
  allocation.cpus_per_node = {8, 8};
  const LocalScheduler scheduler({}, 8, true, allocation);
  JobSpec eight = job(8);
  eight.nodes = 2;
  eight.name = "p001-x";
  // 4 ranks on each node of 8 CPUs: 2 threads each (8 ranks on 8 CPUs would give 1).
  EXPECT_TRUE(has(scheduler.command_for(eight), "HARNESS_THREADS_PER_RANK=2"));
  // 16 ranks on two nodes of 8 fill them without oversubscribing; 24 put 12 on a node.
  JobSpec sixteen = job(16, 1);
  sixteen.nodes = 2;
  EXPECT_EQ(scheduler.caution({eight, sixteen}), "");
  JobSpec crowded = job(24, 1);
  crowded.nodes = 2;
  crowded.name = "p002-x";
  EXPECT_EQ(scheduler.caution({crowded}),
            "oversubscribed: 1 point(s) run more rank threads than the CPUs SLURM allocation 42 gives a node: p002-x "
            "(12 ranks × 1 thread on 8 cores of a node); their compute time includes waiting for a core");
  // The fewest CPUs among the job's nodes; the allocation's CPUs bound the ranks.
  allocation.cpus_per_node = {8, 4};
  const LocalScheduler uneven({}, 8, true, allocation);
  EXPECT_TRUE(has(uneven.command_for(eight), "HARNESS_THREADS_PER_RANK=1"));
  EXPECT_EQ(uneven.limits().max_ranks, 8 * 12);
  EXPECT_NE(uneven.limits().why.find("SLURM allocation 42 has 12 CPUs on its 2 node(s)"), std::string::npos);
  // A one-node job on the first node.
  JobSpec one_node = job(2);
  EXPECT_TRUE(has(uneven.command_for(one_node), "HARNESS_THREADS_PER_RANK=4"));
}

}  // namespace
}  // namespace harness
