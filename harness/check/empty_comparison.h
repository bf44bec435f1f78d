// Why a `harness check` compared nothing. A gate that compared nothing has not passed: a comm run
// checked against a training run, a run whose points all failed checked against itself, or a
// baseline that shares no configuration with the current run is an error (exit 2) that says so,
// never "0 regression(s)".
#pragma once

#include <string>
#include <vector>

#include "harness/check/check_options.h"
#include "harness/check/check_report.h"
#include "harness/check/configurations.h"

namespace harness {

// Why `rows` (of configurations, before unreadable files are listed) compared nothing: "" when a
// row compared a metric or found a regression; otherwise the reason, to follow "nothing compared: "
// (where sides were not comparable, the first such row's note, which says what differs and what
// to do).
std::string nothing_compared(const std::vector<CheckRow>& rows, const ResultsSide& current,
                             const ResultsSide* baseline, const CheckOptions& options);

}  // namespace harness
