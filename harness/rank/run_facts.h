// What a rank learns of the run for its record: the MPI library, its host, and, gathered on rank
// 0, every rank's GPU and whether the ranks' threads outnumbered their cores.
#pragma once

#include <optional>
#include <string>

#include "backends/communicator.h"
#include "harness/common/machine.h"
#include "harness/results/record.h"

namespace harness {

// MPI_Get_library_version's first line.
std::string mpi_library_version();

// This rank's host as MPI names it (the records' hosts: a simulated node's name), without a
// collective.
std::string processor_name();

// Every rank's GPU, on rank 0 (collective; device "cuda" only).
GpuFacts gather_gpu_facts(const Communicator& communicator, int cuda_device, const std::string& backend);

// Where the ranks' threads outnumbered the cores they could use, on rank 0 (collective).
std::optional<Oversubscription> gather_oversubscription(const Communicator& communicator, int threads_per_rank);

}  // namespace harness
