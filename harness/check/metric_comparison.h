// One metric (at one message size) of one configuration compared with what it is held against:
// the per-repeat values of the sides in, a row's numbers and verdict out. Pure, so that every
// form of comparison is tested on numbers alone.
//
// Values are compared as log ratios (the change is relative), or, when a side has a value of 0
// (communication fully hidden, or none at one rank), as differences in the metric's unit: a ratio
// to 0 means nothing, and dropping the zeros would hide the change.
#pragma once

#include <map>

#include "harness/check/check_metrics.h"
#include "harness/check/check_report.h"

namespace harness {

// A configuration's values of one metric, by repeat.
using RepeatValues = std::map<int, double>;

struct MetricSides {
  const RepeatValues* current = nullptr;             // the candidate in the current run
  const RepeatValues* current_reference = nullptr;   // its --against counterpart in that run
  const RepeatValues* baseline = nullptr;            // the candidate in the --baseline run
  const RepeatValues* baseline_reference = nullptr;  // its counterpart there (both flags)
  bool same_run = false;                             // --baseline is the current run itself
};

// Fills `row`'s values, change, interval, repeats, pairing, verdict and note (its metric, unit,
// direction and limits are set by the caller). False when the metric has no value, or only zeros,
// on every side: it does not apply (no row).
bool compare_metric_values(const CheckMetric& metric, const MetricLimits& limits, const MetricSides& sides,
                           CheckRow& row);

// busbw is reduce_time on another scale (bytes × 2(p-1)/p over the time): a busbw `row` (of a
// configuration of `ranks` ranks) whose times differ by less than reduce_time's floor
// (`time_limits`) is a change the machine does not resolve either, and passes as reduce_time's row
// of that size does (the two rows of one size never disagree on that).
void apply_time_floor(CheckRow& row, int ranks, const MetricLimits& time_limits);

}  // namespace harness
