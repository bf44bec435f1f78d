// Comm benchmark repeats whose sums differed from MPI_Allreduce's (#wrong > 0, counted by every
// point's own check, comm_benchmark.h). A backend that sums wrong is broken whatever its speed: a
// configuration that sums wrong where what it is held against does not is a regression in one
// run, like one that crashes, never a question of noise.
#pragma once

#include <cstdint>
#include <string>

#include "harness/check/configurations.h"

namespace harness {

struct WrongSums {
  int repeats = 0;          // ok repeats with a wrong element at some size
  int total = 0;            // ok repeats
  int64_t elements = 0;     // wrong elements over those repeats and sizes
  int64_t first_bytes = 0;  // the smallest size with a wrong element
};

// Over the ok repeats of a comm configuration (a training one has none).
WrongSums wrong_sums_of(const Configuration& configuration);

// "#wrong 12 from 4 KiB in 1 of 4 repeat(s)"; "" when none was wrong.
std::string wrong_sums_text(const WrongSums& sums);

}  // namespace harness
