// Facts about this invocation of the harness, stored in every record it writes.
#pragma once

#include <string>
#include <vector>

#include "harness/results/record.h"

namespace harness {

// Version, commit, host, command line and working directory; the times are left to the caller.
Provenance current_provenance(const std::vector<std::string>& command_line);
// Seconds since the Unix epoch as "2026-11-22T02:43:27Z".
std::string utc_timestamp(double seconds_since_epoch);
std::string utc_timestamp();  // now

}  // namespace harness
