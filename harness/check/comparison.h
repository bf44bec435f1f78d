// How `harness check` compares configurations (configurations.h) in three forms:
//   --baseline BASE           each configuration of the current run against the same one in BASE
//                             (paired by repeat only when BASE is the same run);
//   --against VALUES          each configuration against its counterpart in the same run, the
//                             configuration with VALUES (repeats ran interleaved: paired);
//   --against and --baseline  the candidate-to-reference ratio of the current run against that of
//                             BASE: the reference cancels machine speed, the baseline holds the
//                             ratio that was.
#pragma once

#include "harness/check/check_options.h"
#include "harness/check/check_report.h"
#include "harness/check/configurations.h"

namespace harness {

// Compares `current` with `baseline` (null without --baseline) and/or its own configurations of
// options.against. Throws ConfigError when neither is given, when no configuration has a value of
// --against, when every one has them all, or when no selected metric applies.
CheckReport compare_results(const ResultsSide& current, const ResultsSide* baseline, const CheckOptions& options,
                            bool strict);

}  // namespace harness
