// `harness-worker worker --settings JSON --output FILE`: the rank program (worker.h), an
// executable of its own, which `harness worker ...` (what launchers and job scripts start) execs.
// Apart so that only the ranks load LibTorch: every other harness command starts without the
// 0.4 s of CPU that LibTorch's start-up costs a process.
#include <cstring>
#include <iostream>

#include "harness/rank/worker.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "worker") == 0) return harness::worker_main(argc - 2, argv + 2);
  std::cerr << "harness-worker: the rank program of harness, started as `harness worker ...` by its launchers; "
               "expected \"worker\" as the first argument\n";
  return 2;  // bad input, as harness exits (harness/cli/commands.h)
}
