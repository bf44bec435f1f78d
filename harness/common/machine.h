// The machine a process runs on, as far as timings depend on it: its host, CPU model, logical
// CPUs and memory. Records carry rank 0's (harness/results/record.h), and `harness check` refuses
// to judge timings of one machine against another's: a backend's small-message times follow the
// machine's caches, core-to-core latency and MPI's paths there, not only the code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct MachineFacts {
  // The host name; on a node simulated in a UTS namespace of this machine (the local launcher's
  // simulate_hosts), the real host's, which the harness's agent passes in HARNESS_PHYSICAL_HOST.
  std::string host;
  std::string cpu_model;   // /proc/cpuinfo's "model name" (or what the architecture calls it)
  int logical_cpus = 0;    // online
  int64_t memory_bytes = 0;  // physical memory

  friend bool operator==(const MachineFacts&, const MachineFacts&) = default;
};

// This machine. Never throws: what cannot be read stays empty or 0.
MachineFacts this_machine();

// This machine's name: HARNESS_PHYSICAL_HOST on a simulated node, else the host name.
std::string physical_host_name();
// The CPUs this process may run on (sched_getaffinity), in increasing order.
std::vector<int> allowed_cpus();

// Where ranks outnumber cores: on machine `host`, `ranks` ranks of `threads_per_rank` threads
// each had only `cores` CPUs to run on between them.
struct Oversubscription {
  std::string host;
  int ranks = 0;
  int threads_per_rank = 0;
  int cores = 0;

  friend bool operator==(const Oversubscription&, const Oversubscription&) = default;
};

// One rank: the machine it ran on (physical_host_name: simulated nodes of one machine share its
// cores), the CPUs it was allowed, and its cgroup's CPU quota (usable_cpus.h; 0: none).
struct RankCpus {
  std::string host;
  std::vector<int> cpus;
  double quota_cpus = 0;
  std::string cgroup;  // whose quota it is: ranks of one cgroup share it
};

// The most oversubscribed machine of a run, or nothing: where the ranks' threads (each rank at
// most as many as the CPUs it may use) outnumber the CPUs the ranks of that machine may use
// together. Two ranks bound to the same single core count as two threads on one core. Where every
// rank of a machine has a CPU quota, its cores are at most the quotas of their cgroups together
// (rounded down, at least 1).
std::optional<Oversubscription> oversubscription(const std::vector<RankCpus>& ranks, int threads_per_rank);

// "4 ranks × 1 thread on 2 cores" (of host, when `with_host`).
std::string describe_oversubscription(const Oversubscription& o, bool with_host = false);

// The environment variable through which a simulated node names the machine it runs on.
inline constexpr const char* kPhysicalHostVariable = "HARNESS_PHYSICAL_HOST";

// "" when `a` and `b` are the same machine, otherwise what differs, for a one-line message:
// "host ci-7 against ci-3", "CPU \"AMD EPYC 7B13\" against \"Intel(R) Xeon(R) ...\"". Memory
// counts as the same within 2% (the kernel's reserve moves with its version).
std::string machine_difference(const MachineFacts& a, const MachineFacts& b);

// "ci-7 (AMD EPYC 7B13, 2 CPUs, 23.5 GiB)".
std::string describe_machine(const MachineFacts& machine);

}  // namespace harness
