// This process's rank and the number of ranks in MPI_COMM_WORLD, for tests that run on every
// rank under mpirun (tests/mpi_test_main.cpp).
#pragma once

#include <mpi.h>

namespace harness {

struct World {
  int rank = 0;
  int size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

}  // namespace harness
