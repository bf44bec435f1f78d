// The CPUs this process's ranks can use, which may be fewer than the machine has: the affinity
// mask (taskset, a batch system's binding, a container's cpuset) leaves some out, a cgroup CPU
// quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`: `docker --cpus`, Kubernetes limits) lets
// them run only part of the time, and Open MPI counts a hyperthreaded core as one slot. The
// launchers size threads and warn of oversubscription by `cores()`, and pass mpirun
// --oversubscribe by `slots()`; ranks report their own (harness/rank/run_facts.cpp).
//
// Every reader takes its files' text or root as parameters, so that tests can give any machine's.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

// A cgroup CPU quota: `cpus` CPUs' worth of time (quota / period), set by `file`.
struct CpuQuota {
  double cpus = 0;
  std::string file;
};

struct UsableCpus {
  std::vector<int> cpus;          // the affinity mask, in increasing order
  int online = 0;                 // the machine's online CPUs
  int physical_cores = 0;         // distinct cores among `cpus` (a core's hyperthreads count once)
  std::optional<CpuQuota> quota;  // the smallest along this process's cgroup path; none: unlimited
  std::string cgroup;             // the cgroup the quota is of ("" without one), to tell ranks' apart

  // What ranks can run on at once: the CPUs of the mask, at most the quota (rounded down: with
  // 1.5 CPUs' worth, two busy threads are throttled to three quarters each), at least 1.
  int cores() const;
  // What Open MPI counts as slots on this machine (one per physical core it may use), at least 1:
  // more ranks than this need mpirun --oversubscribe.
  int slots() const;
  // "2 cores", or with what lowered it: "1 core (of 2: cgroup CPU quota of 1 CPU,
  // /sys/fs/cgroup/x/cpu.max)", "1 core (affinity mask: CPU 0 of 2 online)".
  std::string describe() const;
};

// This process's (sched_getaffinity, /sys/devices/system/cpu, /proc/self/cgroup). Never throws:
// what cannot be read leaves the mask's count in place.
UsableCpus usable_cpus();

// Readers, each pure over its input.

// A Linux CPU list ("0-3,8,10-11"), as in cpuset and sysfs files; nothing when malformed.
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

// Distinct cores among `cpus`, each core known by the CPUs that share it (sysfs
// cpuN/topology/core_cpus_list, or thread_siblings_list on older kernels) under `cpu_root`
// (/sys/devices/system/cpu); a CPU whose siblings cannot be read counts as a core of its own.
int count_physical_cores(const std::vector<int>& cpus,
                         const std::filesystem::path& cpu_root = "/sys/devices/system/cpu");

// cgroup v2's cpu.max ("max 100000", "150000 100000"): CPUs' worth; nothing for "max" or malformed.
std::optional<double> parse_cpu_max(std::string_view text);
// cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us: CPUs' worth; nothing for -1 or malformed.
std::optional<double> parse_cfs_quota(std::string_view quota_us, std::string_view period_us);

// The CPU quota of the cgroup a process is in, from its /proc/PID/cgroup and /proc/PID/mountinfo:
// the smallest along its path from its cgroup up to the controller's mount (v2 where the cpu
// controller is there, else v1's cpu controller). `root` prefixes every mount point read (a test's
// directory; "/" on a machine). `cgroup` is set to the process's cgroup path.
std::optional<CpuQuota> cgroup_cpu_quota(std::string_view proc_cgroup, std::string_view mountinfo,
                                         const std::filesystem::path& root, std::string* cgroup = nullptr);

// SLURM_JOB_CPUS_PER_NODE ("72(x2),36": two nodes of 72 CPUs and one of 36), a count per node in
// the allocation's order; nothing when malformed.
std::optional<std::vector<int>> parse_slurm_cpus_per_node(std::string_view text);

}  // namespace harness
