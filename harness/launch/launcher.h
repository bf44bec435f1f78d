// Launchers start one point's ranks and wait for them. The run command hands a launcher the
// worker command line of one point; the launcher wraps it (mpirun, later sbatch), applies the
// per-point limits, keeps the output in the point's log and reports how it ended.
//
// Adding a launcher = a file pair + a line in make_launcher() + a test.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/common/process.h"
#include "harness/study/settings.h"

namespace harness {

struct LaunchRequest {
  PointSettings settings;                  // ranks, timeout_s, threads_per_rank
  std::vector<std::string> worker_argv;    // the program each rank runs, with its arguments
  std::string log_path;
};

struct LaunchOutcome {
  std::vector<std::string> command;  // exactly what was executed
  int threads_per_rank = 1;
  ProcessOutcome process;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // Throws LaunchError when this launcher cannot run here at all (e.g. mpirun missing), so the
  // run command can stop before the first point.
  virtual void check_available() const = 0;
  // The most ranks one point may ask for; validation refuses more before anything runs.
  virtual int max_ranks() const = 0;
  // Why that is the limit, for the error message.
  virtual std::string max_ranks_reason() const = 0;
  // The command that would run the point, without running it (for `plan` and the record).
  virtual std::vector<std::string> command_for(const LaunchRequest& request) const = 0;
  // Runs the point to completion (or timeout / interrupt). Blocks.
  virtual LaunchOutcome launch(const LaunchRequest& request) = 0;
};

// Names accepted in the experiment's "launcher" key.
const std::vector<std::string>& launcher_names();
std::unique_ptr<Launcher> make_launcher(const std::string& name);

// CPU cores this process may run on (sched_getaffinity), at least 1.
int available_cores();

}  // namespace harness
