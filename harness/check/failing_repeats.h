// Whether a configuration fails more often now than what it is held against (the baseline's same
// configuration, or its reference in the same run). A flaky baseline must not hide a
// configuration that now fails outright, so the failed repeats of the two sides are compared as
// counts: any failure where the other side had none, every repeat failing where the other side
// had an ok one, or more failures than the other side's by a one-sided Fisher exact test at the
// check's confidence (95%).
#pragma once

#include <string>

#include "harness/check/configurations.h"

namespace harness {

struct FailureCounts {
  int failed = 0;
  int total = 0;  // failed and ok repeats
};

// The one-sided p-value of Fisher's exact test that `now` fails more often than `before`: the
// probability, with the failures of both sides pooled and dealt at random, that `now` gets at
// least as many as it has. 1 when `now` has no failure.
double more_failures_p_value(FailureCounts now, FailureCounts before);

// Why `now` fails more than `before`, to be read after "failing ..." ("where the baseline does
// not", "in every repeat where the baseline's 4 of 5 were ok", "more often than the baseline
// (1 of 5 failed there; one-sided Fisher exact p = 0.024)"); "" when it does not, or when
// `before` has no repeat at all (nothing to hold the failures against). `other` names
// the other side ("the baseline", "its reference").
std::string failing_more(FailureCounts now, FailureCounts before, const std::string& other);

// The failed and all judged (failed and ok) repeats of `configuration`.
FailureCounts failures_of(const Configuration& configuration);
// Whether any repeat of `configuration` was judged: ok or failed (not only ended by the scheduler).
bool has_records(const Configuration& configuration);
// "failed (rank 1: Killed)": the status and reason of its first failed repeat (there must be one).
std::string first_reason(const Configuration& configuration);
// "; 2 repeat(s) ended by the scheduler, which count as missing: preempted (job 12 was preempted)",
// or "" when the scheduler ended none.
std::string interrupted_text(const Configuration& configuration);

}  // namespace harness
