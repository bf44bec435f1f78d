// What must agree for two records' timings to be compared (harness check): the schema of the
// measurements where timings changed meaning, the number of hosts, the MPI library's release and
// the device.
#pragma once

#include <string>

#include "harness/results/record.h"

namespace harness {

// The MPI implementation and its version to the minor number ("Open MPI v4.1"): another patch
// release or packaging of the same library is comparable, another library or release is not.
std::string mpi_release(std::string text);

// The schema of what a record's timings were measured with: its measurements' own, which the
// rank program of its build wrote (in a two-build run the running harness writes both records,
// so the record's schema is the same on both sides while the base's rank program may be older), or
// the record's when that is older (a record converted from an older version).
int timings_schema(const PointRecord& record);

// Why two ok records' timings may not be compared ("2 host(s) against 1"), or "" when they may be;
// MPI libraries that differ are compared when `allow_other_mpi` (harness check --allow-other-mpi).
std::string incomparable(const PointRecord& a, const PointRecord& b, bool allow_other_mpi = false);

}  // namespace harness
