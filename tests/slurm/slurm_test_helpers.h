// Helpers of the tests against the local SLURM cluster (CTest fixture SlurmCluster).
#pragma once

#include <string>
#include <vector>

#include "../e2e/e2e_helpers.h"
#include "harness/common/clock.h"
#include "harness/common/json.h"

namespace harness::e2e {

// Runs `argv` (a cluster command, pkill) with its output in `log`; its exit status, -1 if none.
int run_command(const std::vector<std::string>& argv, const fs::path& log);

// slurm/local-cluster.sh with `arguments` (start-node hnode2, ...) on the test's cluster, its
// output in `log`. The daemons it starts outlive this process: they are not its children's
// leftovers, which a ChildProcess stops when it ends.
int run_cluster_script(const std::vector<std::string>& arguments, const fs::path& log);

// The records in OUT/points, by id.
std::vector<Json> records(const fs::path& out);

// Polls `ready` every 100 ms for up to `limit_s`.
template <typename Ready>
bool wait_until(Ready ready, double limit_s = 120) {
  const auto start = Clock::now();
  while (seconds_since(start) < limit_s) {
    if (ready()) return true;
    wait_for_any({}, 0.1);
  }
  return false;
}

}  // namespace harness::e2e
