#pragma once

#include <string>

#include "harness/results/result_set.h"

namespace harness {

// Where each backend configuration of the run overtakes MPI_Allreduce (backend "allreduce"): per
// message size, allreduce's median time over its repeats divided by the configuration's, against
// the allreduce configuration equal on every setting but the backend and the settings backends
// own (so `hier` with hier_allreduce_below_bytes 0 meets the plain allreduce points). One line per
// configuration, e.g. "hier hier_allreduce_below_bytes=0: faster from 16384 B up (1.09-1.27x),
// 0.71-1.11x below"; "" when the run has no allreduce points to compare with. The console table
// ends with it: the crossover a backend setting such as hier_allreduce_below_bytes should take.
// Then, for a backend setting that marks a crossover between the backend's own algorithms
// (BackendSetting::own_crossover: cuda_ipc_one_shot_below_bytes), the backend's configurations
// that differ only in it, each against the one with the largest value, under a heading of their
// own: "Against backend=cuda_ipc cuda_ipc_one_shot_below_bytes=1073741824 ...:" and
// "  backend=cuda_ipc cuda_ipc_one_shot_below_bytes=0: faster from 1048576 B up (...)".
std::string crossover_summary(const ResultSet& set);

}  // namespace harness
