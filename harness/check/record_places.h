// Where the records of a configuration ran, as far as they say: each ok record's machine and
// nodes (its measurements), a failed one's from what it wrote before it stopped, or, for a cluster
// job, the node its script ran on (launch.host). `harness check` compares timings of one machine
// only, and the two points of a pair (--against in one run: base and head of a repeat, run back
// to back) only where they shared their nodes: on a cluster, two jobs may land on different nodes.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/check/configurations.h"
#include "harness/common/machine.h"

namespace harness {

struct RecordPlace {
  std::optional<MachineFacts> machine;  // rank 0's machine, when the record says
  std::set<std::string> nodes;          // the nodes its ranks ran on; empty when it does not say
  bool every_rank = false;              // `nodes` lists every rank's (measurements), not one node
};

RecordPlace place_of(const PointRecord& record);

// The repeats whose two records (of `candidate` and `reference`, ok or failed) say they ran on
// different nodes, each with what says so: "repeat 2 ran on nodeb (p002-...), its reference on
// nodea (p003-...)".
std::map<int, std::string> split_pairs(const Configuration& candidate, const Configuration& reference);

// `configuration` without the records of `repeats`.
Configuration without_repeats(Configuration configuration, const std::map<int, std::string>& repeats);

// The distinct machines of a configuration's records (ok ones, and failed ones that say), in
// repeat order; and whether an ok record did not say (a record before schema 7).
struct ConfigurationMachines {
  std::vector<std::pair<std::string, MachineFacts>> machines;  // point id, machine
  bool ok_record_without_machine = false;
};
ConfigurationMachines machines_of(const Configuration& configuration);

}  // namespace harness
