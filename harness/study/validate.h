// Checks, before anything is launched, that every point of an experiment can run here: names
// exist in the workload and backend tables, the device is built in, the data is readable and
// large enough. Errors name the experiment file and the field the offending value came from.
#pragma once

#include <vector>

#include "harness/study/experiment.h"
#include "harness/launch/launcher.h"

namespace harness {

inline constexpr int64_t kMaxStepsPerPoint = 2'000'000;

// Throws ConfigError ("file: sweep.backend[1]: unknown backend ..."). With a launcher, also
// refuses points asking for more ranks than it can give.
void validate_points(const Experiment& experiment, const std::vector<Point>& points,
                     const Launcher* launcher = nullptr);

}  // namespace harness
