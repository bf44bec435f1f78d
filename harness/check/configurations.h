// The configurations of a results directory, as `harness check` matches them. A configuration is
// a point of the sweep without its repeat; its repeats are the unit of the statistics. A
// configuration's counterpart is the one with equal settings, or else the one equal but for
// inject_comm_delay_us, so that a run with an injected delay meets the same points of a run
// without. Settings that only choose what is observed (timeline, loss_every) never count: a run
// traced to explain a regression meets the same points of its untraced baseline.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "harness/results/record.h"
#include "harness/results/results_directory.h"
#include "harness/study/experiment.h"

namespace harness {

// The records of one configuration of a results directory, by repeat.
struct Configuration {
  std::string identity;        // settings without repeat, as canonical JSON
  std::string match_identity;  // the same without inject_comm_delay_us
  PointSettings settings;
  std::string first_id;  // the point id of its first repeat
  std::string label;     // "comm ring ranks=2"
  std::map<int, const PointRecord*> ok;
  std::map<int, const PointRecord*> not_ok;
  // Repeats the scheduler ended (ended_by_the_scheduler: preempted, a node failure, cancelled by
  // someone else, lost): missing, neither ok nor failing.
  std::map<int, const PointRecord*> interrupted;
};

struct ResultsSide {
  std::string dir;
  std::string canonical_dir;  // to tell that two sides are one run
  Experiment experiment;
  std::deque<PointRecord> records;
  std::vector<Configuration> configurations;  // in sweep order
  std::vector<StoredRecord> unreadable;       // files of points/ that are no record this harness reads

  // The configuration with `settings` other than `exclude`; with `allow_other_delay`, else one
  // equal but for its injected delay (the one without a delay first). Null if none.
  const Configuration* find(const PointSettings& settings, const Configuration* exclude, bool allow_other_delay) const;
};

// The identity of a configuration with `settings` (without the settings that only choose what is
// observed); with `ignore_injection`, inject_comm_delay_us does not count either.
std::string configuration_identity(const PointSettings& settings, bool ignore_injection = false);

// Files `record`, the record of `repeat` of `configuration`, as ok or not. A record whose metric
// is not a finite number >= 0 (a NaN, a negative time: a damaged or hand-edited record) is a
// failed repeat, never a missing value: `record` then becomes failed, its reason naming the metric.
// A repeat the scheduler ended is filed as interrupted.
void add_record(Configuration& configuration, int repeat, PointRecord& record);

// Reads a results directory (its experiment.json and points/). Throws ConfigError when `dir` is
// not one.
ResultsSide load_results_side(const std::string& dir);

// "comm ring ranks=2 lr=0.00001": what tells the configuration apart (its swept settings).
std::string configuration_label(const Experiment& experiment, const PointSettings& settings);

// --against's values, {"backend": "allreduce", "ranks": 1}, as "backend=allreduce ranks=1".
std::string values_text(const Json& values);
// The settings of `settings`' counterpart: the same with --against's `values`.
PointSettings with_values(PointSettings settings, const Json& values);
// Whether `settings` has every value of --against's `against` (the configuration is a reference).
bool is_reference(const PointSettings& settings, const Json& against);

}  // namespace harness
