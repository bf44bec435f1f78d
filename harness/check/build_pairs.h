// What `harness check` says of two configurations that ran different harness builds in one run
// (--against '{"build": "base"}', study/builds.h): the settings in which the builds ran
// differently, and whether the order of each back-to-back pair was balanced.
#pragma once

#include <string>

#include "harness/check/configurations.h"

namespace harness {

// "bucket_mb 25 against 50, comm_iterations 20 against 10": the settings (that both builds know)
// whose values differ between the two configurations' records as their builds ran them
// (BuildProvenance::settings; the record's own settings for the running harness's points), but
// those in which the configurations differ on purpose (build, --against's keys); "" when they
// agree, or when a side does not say (records before version 14).
std::string differing_build_settings(const Configuration& candidate, const Configuration& other);

// With the builds of a configuration run back to back in every repeat, which one runs second
// matters (a point run right after another was measured 2-3x slower in 9 of 20 pairs on a 2-vCPU
// VM). "ran after its reference in 3 of 5 repeats" when the candidate ran second in more or fewer
// pairs than first (by the records' positions in the sweep); "" when balanced or not pairs.
std::string unbalanced_order(const Configuration& candidate, const Configuration& reference);

}  // namespace harness
