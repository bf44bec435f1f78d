// `harness-comm-worker worker --settings JSON --output FILE`: the rank program for comm points of
// every backend but gloo (LibTorch's), without LibTorch. `harness worker ...` execs it for those
// points (runs_without_libtorch, harness/study/kind.h) and harness-worker for every other.
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/rank/worker_core.h"
#include "harness/study/kind.h"

namespace harness {
namespace {

Measurements run_comm_only(const PointContext& point) {
  if (!runs_without_libtorch(kind_name(point.settings.kind), point.settings.backend)) {
    throw ConfigError(fmt::format("harness-comm-worker runs comm points of backends other than gloo, not a {} "
                                  "point of backend {}: `harness worker` starts harness-worker for it",
                                  kind_name(point.settings.kind), point.settings.backend));
  }
  Measurements results;
  results.comm = run_comm_point(point);
  return results;
}

}  // namespace
}  // namespace harness

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "worker") == 0) {
    return harness::rank_program_main(argc - 2, argv + 2, /*setup_threads=*/nullptr, harness::run_comm_only);
  }
  std::cerr << "harness-comm-worker: the rank program of harness for comm points, started as `harness worker ...` "
               "by its launchers; expected \"worker\" as the first argument\n";
  return 2;  // bad input, as harness exits (harness/cli/commands.h)
}
