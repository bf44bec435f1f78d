// Which comm records one fit of the cost model may pool. A fit is one α, β, γ per backend, so
// its samples must measure one kind of link and nothing but the backend:
//   - a point with inject_comm_delay_us waits that long in every call by design: its delay would
//     be fitted as latency (α), so it is left out, and the model says so;
//   - one-node points move bytes through memory, multi-node points through the network: pooled,
//     β would describe neither link, so a backend gets one fit per side of that line
//     ("ring" and "ring across nodes"). hier runs two levels at once across nodes and has its
//     form on one node only: its multi-node points are refused;
//   - two harness builds in one run (study/builds.h: base and head) are two codes: each build's
//     records get fits of their own ("ring, build base" and "ring, build head").
#pragma once

#include <set>
#include <string>
#include <vector>

#include "harness/model/cost_model.h"
#include "harness/results/record.h"

namespace harness {

struct SampleGroup {
  std::string backend;
  bool across_nodes = false;  // its records ran on more than one host
  std::string build;          // the setting `build` of its records ("" = the running harness)
  std::vector<CostSample> samples;
};

struct SampleGroups {
  std::vector<SampleGroup> groups;    // in the order their first records come
  std::vector<std::string> left_out;  // one line per reason records were left out
  std::set<std::string> hosts;        // of the records fitted
  int max_ranks = 0;
};

// "ring", "ring across nodes", "ring, build base": a fit's name in tables, files and plots.
std::string group_label(const std::string& backend, bool across_nodes, const std::string& build = "");

// Groups the ok comm records on device cpu of `records`. Throws ConfigError naming `comm_dir`
// for hier across nodes, and when no record is left to fit.
SampleGroups group_cost_samples(const std::vector<const PointRecord*>& records, const std::string& comm_dir);

}  // namespace harness
