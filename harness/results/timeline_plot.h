// The timeline plot (plots/timeline.gp): a few traced steps of one point, drawn from the Chrome
// trace that `harness run --timeline` wrote (logs/<id>.trace.json), so that the report and
// docs/explaining-the-numbers.md show a timeline without a trace viewer. The point drawn is the ok point with a trace
// and the most ranks (the first of them); the steps are three consecutive traced steps after the
// first (which warms caches), or as many as were traced.
#pragma once

#include <optional>
#include <string>

#include "harness/results/result_set.h"

namespace harness {

struct TimelinePlot {
  std::string data;         // the .dat blocks plots/timeline.gp reads
  std::string description;  // "p003 (4 ranks), steps 1 to 3"
};

// Nothing when no ok point has a readable trace.
std::optional<TimelinePlot> timeline_plot(const ResultSet& set, const ResultsDirectory& directory);

}  // namespace harness
