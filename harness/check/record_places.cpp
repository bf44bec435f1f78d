#include "harness/check/record_places.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace harness {
namespace {

const Measurements* measured(const PointRecord& record) {
  if (record.measurements) return &*record.measurements;
  if (record.partial_measurements) return &*record.partial_measurements;
  return nullptr;
}

std::string nodes_text(const std::set<std::string>& nodes) { return fmt::format("{}", fmt::join(nodes, ", ")); }

// A node's name to its first label: a cluster job's script says `hostname` ("node1.cluster.org"),
// MPI names the ranks' hosts short ("node1").
std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

// Whether two places say they ran on different nodes: every rank's nodes differ, or a job's node
// is not among the other's ranks' (a failed cluster job says only where its script ran).
bool different_nodes(const RecordPlace& a, const RecordPlace& b) {
  if (a.nodes.empty() || b.nodes.empty()) return false;
  const auto short_names = [](const std::set<std::string>& nodes) {
    std::set<std::string> names;
    for (const auto& node : nodes) names.insert(short_name(node));
    return names;
  };
  const std::set<std::string> nodes_a = short_names(a.nodes);
  const std::set<std::string> nodes_b = short_names(b.nodes);
  if (a.every_rank && b.every_rank) return nodes_a != nodes_b;
  const std::set<std::string>& one = a.every_rank ? nodes_b : nodes_a;
  const std::set<std::string>& other = a.every_rank ? nodes_a : nodes_b;
  return std::none_of(one.begin(), one.end(), [&other](const std::string& node) { return other.count(node) != 0; });
}

const PointRecord* record_of(const Configuration& configuration, int repeat) {
  for (const auto* records : {&configuration.ok, &configuration.not_ok}) {
    if (const auto found = records->find(repeat); found != records->end()) return found->second;
  }
  return nullptr;
}

}  // namespace

RecordPlace place_of(const PointRecord& record) {
  RecordPlace place;
  if (const Measurements* measurements = measured(record)) {
    place.machine = measurements->machine;
    place.nodes.insert(measurements->hosts.begin(), measurements->hosts.end());
    place.every_rank = !place.nodes.empty();
  }
  if (place.nodes.empty() && !record.launch.host.empty()) place.nodes.insert(record.launch.host);
  return place;
}

std::map<int, std::string> split_pairs(const Configuration& candidate, const Configuration& reference) {
  std::map<int, std::string> split;
  std::set<int> repeats;
  for (const auto* records : {&candidate.ok, &candidate.not_ok}) {
    for (const auto& [repeat, record] : *records) repeats.insert(repeat);
  }
  for (const int repeat : repeats) {
    const PointRecord* mine = record_of(candidate, repeat);
    const PointRecord* theirs = record_of(reference, repeat);
    if (mine == nullptr || theirs == nullptr) continue;
    const RecordPlace a = place_of(*mine);
    const RecordPlace b = place_of(*theirs);
    if (different_nodes(a, b)) {
      split[repeat] = fmt::format("repeat {} ran on {} ({}), its reference on {} ({})", repeat + 1,
                                  nodes_text(a.nodes), mine->id, nodes_text(b.nodes), theirs->id);
    }
  }
  return split;
}

Configuration without_repeats(Configuration configuration, const std::map<int, std::string>& repeats) {
  for (const auto& [repeat, why] : repeats) {
    configuration.ok.erase(repeat);
    configuration.not_ok.erase(repeat);
    configuration.interrupted.erase(repeat);
  }
  return configuration;
}

ConfigurationMachines machines_of(const Configuration& configuration) {
  ConfigurationMachines out;
  for (const auto* records : {&configuration.ok, &configuration.not_ok}) {
    for (const auto& [repeat, record] : *records) {
      const RecordPlace place = place_of(*record);
      if (!place.machine) {
        out.ok_record_without_machine |= record->ok();
        continue;
      }
      const bool seen = std::any_of(out.machines.begin(), out.machines.end(),
                                    [&place](const auto& entry) { return entry.second == *place.machine; });
      if (!seen) out.machines.emplace_back(record->id, *place.machine);
    }
  }
  return out;
}

}  // namespace harness
