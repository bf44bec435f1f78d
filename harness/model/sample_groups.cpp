#include "harness/model/sample_groups.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "backends/registry.h"
#include "harness/common/errors.h"
#include "harness/study/settings.h"

namespace harness {

std::string group_label(const std::string& backend, bool across_nodes, const std::string& build) {
  const std::string label = across_nodes ? backend + " across nodes" : backend;
  return build.empty() ? label : label + ", build " + build;
}

namespace {

// The settings a record's rank program ran with: its build's (BuildProvenance::settings) when it
// says, else the record's own.
PointSettings settings_run(const PointRecord& record) {
  if (!record.build || record.build->settings.empty()) return record.settings;
  try {
    return settings_from_json(record.build->settings, "build.settings");
  } catch (const ConfigError&) {
    return record.settings;  // a setting this harness no longer reads: the record's view
  }
}

// A group left with fewer than two sizes of its own after its backend's crossover (a sweep that
// ends near it) has no fit: said in `out.left_out`, rather than failing the whole model.
void drop_groups_left_without_two_sizes(SampleGroups& out, const std::map<std::string, int>& handed_to_mpi) {
  std::erase_if(out.groups, [&](const SampleGroup& group) {
    if (!handed_to_mpi.contains(group.backend)) return false;
    std::set<int64_t> sizes;
    for (const CostSample& sample : group.samples) sizes.insert(sample.bytes);
    if (sizes.size() >= 2) return false;
    out.left_out.push_back(fmt::format("{} not fitted: {} of the run's sizes lie above its crossover, and a fit needs "
                                       "two (run the comm benchmark to larger sizes, or with the crossover at 0)",
                                       group_label(group.backend, group.across_nodes, group.build), sizes.size()));
    return true;
  });
}

}  // namespace

SampleGroups group_cost_samples(const std::vector<const PointRecord*>& records, const std::string& comm_dir) {
  SampleGroups out;
  int delayed = 0;
  int threaded = 0;                          // records whose ranks added on several threads
  std::map<std::string, int> handed_to_mpi;  // samples left out, by backend
  for (const PointRecord* record : records) {
    if (!record->ok() || !record->measurements) continue;
    if (record->settings.device != "cpu") continue;  // staging copies are not the backend's cost
    if (record->settings.inject_comm_delay_us > 0) {
      ++delayed;
      continue;
    }
    // The model's γ is one thread's arithmetic per rank; a backend that added on several
    // (shm_reduce_threads) would bend the fit of its single-thread records.
    // What the record's build ran with: a named build runs the settings the experiment leaves alone
    // at its own defaults (study/builds.h), which its record keeps.
    const BackendOptions options = backend_options(settings_run(*record));
    if (shm_reduce_threads(options) > 1) {
      ++threaded;
      continue;
    }
    const std::string& backend = record->settings.backend;
    const std::set<std::string> hosts(record->measurements->hosts.begin(), record->measurements->hosts.end());
    const bool across_nodes = hosts.size() > 1;
    if (backend == "hier" && across_nodes) {
      // Its two levels (shared memory, then a ring between nodes on 1/m of the bytes) move bytes
      // over links of two speeds; one α, β, γ cannot describe it.
      throw ConfigError(fmt::format("{}: backend \"hier\" ran on {} nodes; the cost model has its form on one node "
                                    "only (leave its multi-node points out of the comm run)",
                                    comm_dir, hosts.size()));
    }
    const std::string& build = record->settings.build;
    auto group = std::find_if(out.groups.begin(), out.groups.end(), [&](const SampleGroup& g) {
      return g.backend == backend && g.across_nodes == across_nodes && g.build == build;
    });
    if (group == out.groups.end()) {
      group = out.groups.insert(out.groups.end(), SampleGroup{backend, across_nodes, build, {}});
    }
    // Sizes the backend handed to MPI_Allreduce (below its crossover setting) time MPI, not it.
    const BackendInfo* info = backend_or_null(backend);
    // The schema of the rank program that measured it (an older build's may be older than the record).
    const int measured_schema = std::min(record->schema_version, record->measurements->schema_version);
    const bool ring_before_its_crossover = backend == "ring" && measured_schema < kRingCrossoverSince;
    const std::size_t mpi_below = info != nullptr && info->hands_to_mpi_below_bytes != nullptr && !ring_before_its_crossover
                                      ? info->hands_to_mpi_below_bytes(options)
                                      : 0;
    for (const CostSample& sample : cost_samples(*record)) {
      if (static_cast<std::size_t>(sample.bytes) < mpi_below) {
        ++handed_to_mpi[backend];
        continue;
      }
      group->samples.push_back(sample);
    }
    out.hosts.insert(hosts.begin(), hosts.end());
    out.max_ranks = std::max(out.max_ranks, record->settings.ranks);
  }
  if (delayed > 0) {
    out.left_out.push_back(fmt::format("{} record(s) with inject_comm_delay_us left out: an injected delay is no cost "
                                       "of the backend (it would be fitted as alpha)",
                                       delayed));
  }
  if (threaded > 0) {
    out.left_out.push_back(fmt::format("{} record(s) with shm_reduce_threads above 1 left out: the model fits each "
                                       "rank's arithmetic on one thread",
                                       threaded));
  }
  for (const auto& [backend, count] : handed_to_mpi) {
    out.left_out.push_back(fmt::format("{} sample(s) of {} below its crossover setting left out: the backend handed "
                                       "those sizes to MPI_Allreduce (set its crossover to 0 to fit them)",
                                       count, backend));
  }
  drop_groups_left_without_two_sizes(out, handed_to_mpi);
  if (out.groups.empty()) {
    throw ConfigError(fmt::format("{}: no ok comm record on device cpu{}{} to fit", comm_dir,
                                  delayed > 0 ? " without an injected delay" : "",
                                  threaded > 0 ? " with shm_reduce_threads 1" : ""));
  }
  return out;
}

}  // namespace harness
