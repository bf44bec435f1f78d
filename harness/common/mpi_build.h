// The MPI this harness was built against, as configure found it (cmake/mpi_flavour.cmake): what
// `harness --version` says, and what the local launcher speaks (harness/launch/mpi_dialect.h).
// The orchestrator links no MPI; the rank programs report the library they loaded at run time in
// every record (measurements.mpi_library).
#pragma once

#include <string>

namespace harness {

struct MpiBuild {
  std::string family;    // "openmpi", or "mpich" for MPICH and its family (MVAPICH2, Intel MPI, Cray MPICH)
  std::string library;   // MPI_Get_library_version's first line at configure time
  std::string launcher;  // the launcher configure found for it (MPIEXEC_EXECUTABLE), "" if none
};

const MpiBuild& mpi_build();

// `harness --version`'s line: "MPI: MPICH Version: 4.0.2 (family mpich, launcher /usr/bin/mpiexec.mpich)".
std::string describe_mpi_build();

}  // namespace harness
