// How long a sweep will take, from the wall times of earlier completed records of the same points
// (same PointKey) under a folder of results directories (by default results/<experiment>/).
#pragma once

#include <string>
#include <vector>

#include "harness/study/sweep.h"

namespace harness {

struct SweepEstimate {
  int points = 0;
  int measured = 0;       // points with an earlier record
  double measured_s = 0;  // their wall times, summed
  std::vector<double> earlier_s;  // per point, in order: its earlier wall time; 0 = never measured
  // The whole sweep, the unmeasured points at the measured ones' mean; 0 when none was measured.
  double total_s() const;
};

// Looks through every results directory under `root` (recursively). Unreadable records count as
// never measured.
SweepEstimate estimate_sweep(const std::vector<Point>& points, const std::string& root);

// "estimated time: 3 min 10 s (12 of 18 point(s) measured before under results/speedup/; the
// others at their mean)", or "estimated time: unknown (...)".
std::string describe_estimate(const SweepEstimate& estimate, const std::string& root);

}  // namespace harness
