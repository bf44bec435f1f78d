#include "harness/common/machine.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

namespace harness {
namespace {

std::string trimmed_value(const std::string& line) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return "";
  const auto start = line.find_first_not_of(" \t", colon + 1);
  return start == std::string::npos ? "" : line.substr(start);
}

// The first of `keys` that /proc/cpuinfo has: x86 says "model name"; arm64 has no model name,
// only "CPU part" numbers, and some kernels a "Hardware" or "cpu model" line.
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::string fallback;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return trimmed_value(line);
    if (fallback.empty() && (line.rfind("Hardware", 0) == 0 || line.rfind("cpu model", 0) == 0 ||
                             line.rfind("CPU part", 0) == 0)) {
      fallback = trimmed_value(line);
    }
  }
  return fallback;
}

}  // namespace

std::string physical_host_name() {
  if (const char* physical = std::getenv(kPhysicalHostVariable); physical != nullptr && *physical != '\0') {
    return physical;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    for (long cpu = 0; cpu < ::sysconf(_SC_NPROCESSORS_ONLN); ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

std::optional<Oversubscription> oversubscription(const std::vector<RankCpus>& ranks, int threads_per_rank) {
  std::map<std::string, std::pair<int, std::set<int>>> machines;  // host -> threads wanted, CPUs allowed
  std::map<std::string, int> rank_count;
  std::map<std::string, std::map<std::string, double>> quotas;  // host -> each cgroup's quota
  std::set<std::string> unlimited;                              // hosts with a rank without a quota
  for (const RankCpus& rank : ranks) {
    auto& [threads, cpus] = machines[rank.host];
    // Every thread the rank starts, even beyond the CPUs it may use: they then take turns on
    // those (the pre-launch warning counts them so too).
    threads += std::max(1, threads_per_rank);
    cpus.insert(rank.cpus.begin(), rank.cpus.end());
    ++rank_count[rank.host];
    if (rank.quota_cpus > 0) {
      quotas[rank.host][rank.cgroup] = rank.quota_cpus;
    } else {
      unlimited.insert(rank.host);
    }
  }
  std::optional<Oversubscription> worst;
  double worst_ratio = 1;
  for (const auto& [host, wanted] : machines) {
    int cores = std::max<int>(1, static_cast<int>(wanted.second.size()));
    if (!unlimited.contains(host)) {
      double quota = 0;
      for (const auto& [cgroup, cpus] : quotas[host]) quota += cpus;
      cores = std::min(cores, std::max(1, static_cast<int>(std::floor(quota + 1e-6))));
    }
    const double ratio = static_cast<double>(wanted.first) / cores;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = Oversubscription{host, rank_count[host], std::max(1, threads_per_rank), cores};
    }
  }
  return worst;
}

std::string describe_oversubscription(const Oversubscription& o, bool with_host) {
  return fmt::format("{} rank{} × {} thread{} on {} core{}{}", o.ranks, o.ranks == 1 ? "" : "s", o.threads_per_rank,
                     o.threads_per_rank == 1 ? "" : "s", o.cores, o.cores == 1 ? "" : "s",
                     with_host ? " of " + o.host : "");
}

MachineFacts this_machine() {
  MachineFacts machine;
  machine.host = physical_host_name();
  machine.cpu_model = cpu_model();
  machine.logical_cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_bytes > 0) machine.memory_bytes = static_cast<int64_t>(pages) * page_bytes;
  return machine;
}

std::string machine_difference(const MachineFacts& a, const MachineFacts& b) {
  if (a.host != b.host) return fmt::format("host {} against {}", a.host, b.host);
  if (a.cpu_model != b.cpu_model) return fmt::format("CPU \"{}\" against \"{}\"", a.cpu_model, b.cpu_model);
  if (a.logical_cpus != b.logical_cpus) return fmt::format("{} CPUs against {}", a.logical_cpus, b.logical_cpus);
  const double larger = static_cast<double>(std::max(a.memory_bytes, b.memory_bytes));
  if (std::abs(static_cast<double>(a.memory_bytes - b.memory_bytes)) > 0.02 * larger) {
    return fmt::format("{:.1f} GiB of memory against {:.1f}", static_cast<double>(a.memory_bytes) / (1 << 30),
                       static_cast<double>(b.memory_bytes) / (1 << 30));
  }
  return "";
}

std::string describe_machine(const MachineFacts& machine) {
  return fmt::format("{} ({}, {} CPUs, {:.1f} GiB)", machine.host,
                     machine.cpu_model.empty() ? "unknown CPU" : machine.cpu_model, machine.logical_cpus,
                     static_cast<double>(machine.memory_bytes) / (1 << 30));
}

}  // namespace harness
