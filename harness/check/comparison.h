// How `harness check` finds what to compare and compares it. A configuration is a point of the
// sweep without its repeat; its repeats are the unit of the statistics. A configuration's
// counterpart is the one with equal settings, or else the one equal but for inject_comm_delay_us,
// so that a run with an injected delay meets the same points of a run without.
//
// Three forms:
//   --baseline BASE           each configuration of the current run against the same one in BASE
//                             (paired by repeat only when BASE is the same run);
//   --against VALUES          each configuration against its counterpart in the same run, the
//                             configuration with VALUES (repeats ran interleaved: paired);
//   --against and --baseline  the candidate-to-reference ratio of the current run against that of
//                             BASE: the reference cancels machine speed, the baseline holds the
//                             ratio that was.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "harness/check/check_options.h"
#include "harness/check/check_report.h"
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

// The identity of a configuration with `settings`; with `ignore_injection`, inject_comm_delay_us
// does not count.
std::string configuration_identity(const PointSettings& settings, bool ignore_injection = false);

// Reads a results directory (its experiment.json and points/). Throws ConfigError when `dir` is
// not one.
ResultsSide load_results_side(const std::string& dir);

// Compares `current` with `baseline` (null without --baseline) and/or its own configurations of
// options.against. Throws ConfigError when neither is given, when no configuration has a value of
// --against, when every one has them all, or when no selected metric applies.
CheckReport compare_results(const ResultsSide& current, const ResultsSide* baseline, const CheckOptions& options,
                            bool strict);

}  // namespace harness
