// Runs a child program (argv only, never a shell) with its output in a log file and a
// wall-clock limit. A timeout or Ctrl-C sends SIGTERM to the child's process group (mpirun then
// takes its ranks down), SIGKILL if it does not end. Ranks can sit in process groups of their own
// (Open MPI 4 does that), so the harness also makes itself a child subreaper: whatever the child
// leaves behind is re-parented to the harness, which kills and reaps it. A child also gets
// SIGTERM when the harness itself dies.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace harness {

struct ProcessOutcome {
  int exit_code = -1;      // valid when exited is true
  int signal = 0;          // the signal that ended the child, if any
  bool exited = false;
  bool timed_out = false;
  bool interrupted = false;  // the harness itself got SIGINT/SIGTERM while waiting
  double timeout_s = 0;      // the limit that applied
  double wall_time_s = 0;
  bool ok() const { return exited && exit_code == 0 && !timed_out && !interrupted; }
  std::string describe() const;  // "exit code 3", "killed by signal 9", "timed out after 5 s", ...
};

struct ProcessRequest {
  std::vector<std::string> argv;
  std::string log_path;    // stdout and stderr, appended; "" = inherit the harness's
  std::string working_directory;  // "" = the harness's
  double timeout_s = 0;    // 0 = no limit
  bool stop_on_interrupt = true;  // false for short helpers (gnuplot) that must finish after Ctrl-C
  std::vector<std::pair<std::string, std::string>> environment;  // set in the child only
};

// Blocks until the child ends, times out or the harness is interrupted. Throws LaunchError when
// the program cannot be started (not found, not executable, log not writable).
ProcessOutcome run_process(const ProcessRequest& request);

// Installs SIGINT/SIGTERM handlers that make run_process stop its child and return with
// `interrupted` set, instead of killing the harness and leaving mpirun behind.
void install_interrupt_handlers();
bool interrupt_requested();

// Searches PATH like execvp; "" when not found.
std::string find_program(const std::string& name);

// The last `lines` lines of a text file (fewer if it is shorter; none if it is missing).
std::vector<std::string> tail_lines(const std::string& path, std::size_t lines);

}  // namespace harness
