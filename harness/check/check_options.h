// What a check compares and how strictly: each metric's threshold and floor (the table's
// defaults, then the experiment's "check" block, then the command line), the metrics selected,
// and the reference values of --against.
//
// The experiment file's block:
//   "check": {"against": {"backend": "allreduce"},
//             "metrics": {"busbw": {"threshold": 0.2, "floor": 0.05}, "reduce_time": {"threshold": "15%"}}}
// A threshold is a relative change (0.2, or "20%"); a floor is in the metric's unit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/check/check_statistics.h"
#include "harness/common/json.h"

namespace harness {

struct CheckOptions {
  std::map<std::string, MetricLimits, std::less<>> limits;  // every metric of the table, by name
  std::vector<std::string> metrics;                         // the ones to compare; empty = all
  Json against = Json::object();                            // setting key -> value, normalised
  std::string against_where;                                // "--against", "exp.json: check.against"
  // Compare the timings of records from different machines (common/machine.h) instead of calling
  // them not comparable; the report then says which machines met.
  bool allow_other_machine = false;
  // Compare the timings of records whose MPI libraries differ (a study of MPI libraries: two builds
  // against two MPIs, docs/mpi.md) instead of calling them not comparable; the report says which met.
  bool allow_other_mpi = false;

  bool selected(std::string_view metric) const;
};

// The table's defaults, nothing selected (all), no --against.
CheckOptions default_check_options();

// Overlays an experiment's "check" block (`where` names it: "exp.json: check"). Throws ConfigError.
void apply_check_block(CheckOptions& options, const Json& block, const std::string& where);

// --threshold NAME=VALUE (0.15 or 15%) and --floor NAME=VALUE. Throws ConfigError.
void apply_threshold_argument(CheckOptions& options, const std::string& argument);
void apply_floor_argument(CheckOptions& options, const std::string& argument);
// --metrics comm_time,busbw. Throws ConfigError for an unknown name.
void select_metrics(CheckOptions& options, const std::string& list);

// The JSON Schema of the "check" block, for experiments/schema.json.
Json check_block_schema();

// --against '{"backend": "allreduce"}': setting values, checked and normalised as records store
// them. Throws ConfigError naming `where`.
Json read_against(const Json& values, const std::string& where);

}  // namespace harness
