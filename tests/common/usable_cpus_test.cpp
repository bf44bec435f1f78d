#include "harness/common/usable_cpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace harness {
namespace {

namespace fs = std::filesystem;

// A fresh directory standing for a machine's / (sysfs and cgroup files written into it).
fs::path machine_root(const std::string& name) {
  const fs::path root = fs::temp_directory_path() / ("harness_usable_cpus_" + name);
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(UsableCpus, CpuListsAreRead) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpu_list("1,0,1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_cpu_list("\n"), std::vector<int>{});  // an empty cpuset
  EXPECT_EQ(parse_cpu_list("3-1"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("a"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("0,,1"), std::nullopt);
}

// Open MPI counts a slot per core: 4 CPUs that are 2 cores' hyperthreads are 2 slots.
TEST(UsableCpus, HyperthreadsOfOneCoreCountAsOneCore) {
  const fs::path cpu_root = machine_root("topology") / "sys/devices/system/cpu";
  // CPUs 0 and 2 share a core, as 1 and 3 do (the numbering of many x86 machines).
  for (const auto& [cpu, siblings] :
       std::vector<std::pair<int, std::string>>{{0, "0,2"}, {1, "1,3"}, {2, "0,2"}, {3, "1,3"}}) {
    put(cpu_root / ("cpu" + std::to_string(cpu)) / "topology" / "core_cpus_list", siblings + "\n");
  }
  EXPECT_EQ(count_physical_cores({0, 1, 2, 3}, cpu_root), 2);
  EXPECT_EQ(count_physical_cores({0, 2}, cpu_root), 1);  // both threads of one core
  EXPECT_EQ(count_physical_cores({0, 1}, cpu_root), 2);
  // An older kernel's name for the same file; a CPU without topology is a core of its own.
  put(cpu_root / "cpu4" / "topology" / "thread_siblings_list", "4-5\n");
  put(cpu_root / "cpu5" / "topology" / "thread_siblings_list", "4-5\n");
  EXPECT_EQ(count_physical_cores({4, 5, 6}, cpu_root), 2);

  UsableCpus cpus;
  cpus.cpus = {0, 1, 2, 3};
  cpus.online = 4;
  cpus.physical_cores = 2;
  EXPECT_EQ(cpus.cores(), 4);  // threads run on every CPU
  EXPECT_EQ(cpus.slots(), 2);  // mpirun starts 2 ranks without --oversubscribe
  EXPECT_EQ(cpus.describe(), "4 cores");
}

TEST(UsableCpus, QuotasAreRead) {
  EXPECT_EQ(parse_cpu_max("max 100000\n"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("150000 100000\n"), 1.5);
  EXPECT_EQ(parse_cpu_max("50000 100000"), 0.5);
  EXPECT_EQ(parse_cpu_max("150000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("x 100000"), std::nullopt);
  EXPECT_EQ(parse_cfs_quota("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(parse_cfs_quota("200000\n", "100000\n"), 2.0);
  EXPECT_EQ(parse_cfs_quota("", "100000"), std::nullopt);
}

// cgroup v2: the smallest cpu.max from the process's cgroup up to the mount, where the cpu
// controller was enabled (the root has no cpu.max).
TEST(UsableCpus, TheSmallestQuotaAlongTheCgroupPathCounts) {
  const fs::path root = machine_root("v2");
  const fs::path cgroup = root / "sys/fs/cgroup";
  put(cgroup / "cgroup.controllers", "cpu memory\n");
  put(cgroup / "job/cpu.max", "300000 100000\n");
  put(cgroup / "job/step/cpu.max", "max 100000\n");
  put(cgroup / "job/step/task 1/cpu.max", "max 100000\n");
  const std::string mountinfo =
      "22 1 0:21 / /sys rw - sysfs sysfs rw\n"
      "30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  std::string path;
  std::optional<CpuQuota> quota = cgroup_cpu_quota("0::/job/step/task 1\n", mountinfo, root, &path);
  ASSERT_TRUE(quota.has_value());
  EXPECT_EQ(quota->cpus, 3.0);
  EXPECT_EQ(quota->file, (cgroup / "job/cpu.max").string());
  EXPECT_EQ(path, "/job/step/task 1");
  // A tighter one further down wins.
  put(cgroup / "job/step/cpu.max", "150000 100000\n");
  quota = cgroup_cpu_quota("0::/job/step/task 1\n", mountinfo, root);
  ASSERT_TRUE(quota.has_value());
  EXPECT_EQ(quota->cpus, 1.5);
  // No quota anywhere; a process outside the mount's subtree (another cgroup namespace's "/..").
  EXPECT_EQ(cgroup_cpu_quota("0::/elsewhere\n", mountinfo, root), std::nullopt);
  EXPECT_EQ(cgroup_cpu_quota("0::/../x\n", mountinfo, root), std::nullopt);
  EXPECT_EQ(cgroup_cpu_quota("", mountinfo, root), std::nullopt);
  // Inside a container's cgroup namespace the process is at "/", the mount's root: its cgroup's
  // own cpu.max is there.
  const fs::path container = machine_root("v2_namespace");
  put(container / "sys/fs/cgroup/cpu.max", "200000 100000\n");
  quota = cgroup_cpu_quota("0::/\n", mountinfo, container);
  ASSERT_TRUE(quota.has_value());
  EXPECT_EQ(quota->cpus, 2.0);
}

// cgroup v1 (and hybrid machines, whose cpu controller is a v1 hierarchy beside an empty v2 one):
// cpu.cfs_quota_us over cpu.cfs_period_us, where the mount may hold a subtree of the hierarchy.
TEST(UsableCpus, CgroupV1QuotasAreRead) {
  const fs::path root = machine_root("v1");
  const fs::path cpu = root / "sys/fs/cgroup/cpu,cpuacct";
  put(cpu / "cpu.cfs_quota_us", "-1\n");
  put(cpu / "cpu.cfs_period_us", "100000\n");
  put(cpu / "slurm/job/cpu.cfs_quota_us", "50000\n");
  put(cpu / "slurm/job/cpu.cfs_period_us", "100000\n");
  const std::string mountinfo =
      "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
      "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  const std::string proc_cgroup = "4:memory:/x\n3:cpuset:/\n2:cpu,cpuacct:/slurm/job\n0::/\n";
  std::optional<CpuQuota> quota = cgroup_cpu_quota(proc_cgroup, mountinfo, root);
  ASSERT_TRUE(quota.has_value());
  EXPECT_EQ(quota->cpus, 0.5);
  EXPECT_EQ(quota->file, (cpu / "slurm/job/cpu.cfs_quota_us").string());
  EXPECT_EQ(cgroup_cpu_quota("2:cpu,cpuacct:/\n0::/\n", mountinfo, root), std::nullopt);
  // A mount of a subtree (a container's view of /slurm/job), its path escaped as mountinfo does.
  const fs::path inside = machine_root("v1_subtree");
  put(inside / "mnt/cpu dir/cpu.cfs_quota_us", "200000\n");
  put(inside / "mnt/cpu dir/cpu.cfs_period_us", "100000\n");
  quota = cgroup_cpu_quota("2:cpu,cpuacct:/slurm/job\n",
                           "32 31 0:29 /slurm/job /mnt/cpu\\040dir rw - cgroup cgroup rw,cpuacct,cpu\n", inside);
  ASSERT_TRUE(quota.has_value());
  EXPECT_EQ(quota->cpus, 2.0);
}

TEST(UsableCpus, AQuotaLowersTheCoresRoundedDown) {
  UsableCpus cpus;
  cpus.cpus = {0, 1, 2, 3};
  cpus.online = 4;
  cpus.physical_cores = 4;
  cpus.quota = CpuQuota{1.5, "/sys/fs/cgroup/job/cpu.max"};
  EXPECT_EQ(cpus.cores(), 1);  // two busy threads on 1.5 CPUs' worth are throttled
  EXPECT_EQ(cpus.slots(), 4);  // Open MPI does not read quotas
  EXPECT_EQ(cpus.describe(), "1 core (cgroup CPU quota of 1.5 CPUs (/sys/fs/cgroup/job/cpu.max))");
  cpus.quota->cpus = 0.999999;  // 99999.9 of 100000
  EXPECT_EQ(cpus.cores(), 1);
  cpus.quota->cpus = 0.2;  // a fifth of one: still a core to run on
  EXPECT_EQ(cpus.cores(), 1);
  cpus.quota->cpus = 8;  // more than the mask allows
  EXPECT_EQ(cpus.cores(), 4);
  EXPECT_EQ(cpus.describe(), "4 cores");
  // The affinity mask (taskset -c 0,2-3 on 4 CPUs).
  cpus.quota.reset();
  cpus.cpus = {0, 2, 3};
  EXPECT_EQ(cpus.cores(), 3);
  EXPECT_EQ(cpus.describe(), "3 cores (affinity mask: CPUs 0,2-3 of 4 online)");
}

TEST(UsableCpus, SlurmsCpusPerNodeAreRead) {
  EXPECT_EQ(parse_slurm_cpus_per_node("72(x2),36"), (std::vector<int>{72, 72, 36}));
  EXPECT_EQ(parse_slurm_cpus_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(parse_slurm_cpus_per_node("2(x3)"), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(parse_slurm_cpus_per_node(""), std::nullopt);
  EXPECT_EQ(parse_slurm_cpus_per_node("4(x)"), std::nullopt);
  EXPECT_EQ(parse_slurm_cpus_per_node("4(2)"), std::nullopt);
  EXPECT_EQ(parse_slurm_cpus_per_node("0"), std::nullopt);
  EXPECT_EQ(parse_slurm_cpus_per_node("4,,4"), std::nullopt);
}

TEST(UsableCpus, ThisProcessHasAtLeastOneCore) {
  const UsableCpus here = usable_cpus();
  EXPECT_GE(here.cores(), 1);
  EXPECT_GE(here.slots(), 1);
  EXPECT_LE(here.slots(), static_cast<int>(here.cpus.size()));
}

}  // namespace
}  // namespace harness
