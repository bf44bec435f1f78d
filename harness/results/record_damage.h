// Whether a record's timings can be measurements at all. No clock gives a negative or non-finite
// duration, so such a value (a hand-edited or damaged record) is never tabled, plotted, fitted or
// checked as if measured: the record counts as a failed repeat whose reason names the value.
#pragma once

#include <string>

#include "harness/results/record.h"

namespace harness {

// "measurements.train.steps.step_s[2] is -1 (expected a finite time >= 0)": the first time of
// `measurements` that is negative or not finite; "" when there is none.
std::string damaged_timing(const Measurements& measurements);

// An ok record with a damaged timing becomes failed, its reason "damaged record: " and the value.
// True when it did.
bool mark_damaged_record(PointRecord& record);

}  // namespace harness
