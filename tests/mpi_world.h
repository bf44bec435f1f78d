// This process's rank, the number of ranks in MPI_COMM_WORLD and of the nodes they run on, for
// tests that run on every rank under mpirun (tests/mpi_test_main.cpp), on one host or on
// simulated nodes (`harness simulated-node`, see tests/CMakeLists.txt).
#pragma once

#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/communicator.h"
#include "backends/registry.h"
#include "harness/common/errors.h"

namespace harness {

struct World {
  int rank = 0;
  int size = 1;
  int nodes = 1;  // one per (simulated) host name, as the launcher placed the ranks
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::vector<std::string> hosts = all_host_names(Communicator(MPI_COMM_WORLD));
    nodes = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
  }
};

// A backend that works within one node only (shm) must refuse ranks on several nodes in one line
// that says what to use instead; true when `backend` is such a backend and it did.
inline bool refuses_across_nodes(const std::string& backend) {
  const World world;
  if (world.nodes == 1 || backend != "shm") return false;
  try {
    make_gradient_sync(backend, MPI_COMM_WORLD);
    ADD_FAILURE() << backend << " accepted ranks on " << world.nodes << " nodes";
  } catch (const NotSupported& error) {
    EXPECT_NE(std::string(error.what()).find("on one node"), std::string::npos) << error.what();
  }
  return true;
}

}  // namespace harness
