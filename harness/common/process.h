// Child programs (argv only, never a shell) with their output in a log file and a wall-clock
// limit, watched without blocking, so that a scheduler can keep several in flight.
//
// Each child starts a session of its own; everything it starts stays in that session (Open MPI's
// ranks sit in process groups of their own, but in mpirun's session). Stopping a child, or its
// ending, takes its whole session down: SIGTERM first (mpirun then stops its ranks), SIGKILL if
// that does not do it. The harness is a child subreaper, so a child's orphans come back to it and
// are reaped here; a child also gets SIGTERM when the harness itself dies.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct ProcessOutcome {
  int exit_code = -1;      // valid when exited is true
  int signal = 0;          // the signal that ended the child, if any
  bool exited = false;
  bool timed_out = false;
  bool interrupted = false;  // stopped on request (Ctrl-C, a cancelled job)
  double timeout_s = 0;      // the limit that applied
  double wall_time_s = 0;
  bool ok() const { return exited && exit_code == 0 && !timed_out && !interrupted; }
  std::string describe() const;  // "exit code 3", "killed by signal 9 (Killed)", "timed out ..."
};

struct ProcessRequest {
  std::vector<std::string> argv;
  std::string log_path;    // stdout and stderr, appended; "" = inherit the harness's
  std::string working_directory;  // "" = the harness's
  double timeout_s = 0;    // 0 = no limit
  bool stop_on_interrupt = true;  // false for short helpers (gnuplot) that must finish after Ctrl-C
  std::vector<std::pair<std::string, std::string>> environment;  // set in the child only
  // Variables of the harness's environment the child does not get: a name, or a prefix and "*"
  // ("SBATCH_*").
  std::vector<std::string> removed_environment;
};

// One running child. Not copyable; destroying a child that still runs stops it.
class ChildProcess {
 public:
  // Starts the program. Throws LaunchError when it cannot (not found, log not writable).
  explicit ChildProcess(const ProcessRequest& request);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Non-blocking: the outcome once the child has ended (its leftovers stopped and reaped),
  // otherwise nothing. Enforces the time limit and, with stop_on_interrupt, Ctrl-C.
  std::optional<ProcessOutcome> poll();
  // Stops the child and its session now (blocks for up to ten seconds); poll() then reports it
  // as interrupted.
  void stop();

  pid_t pid() const { return pid_; }
  // A descriptor that becomes readable when the child exits (a pidfd), or -1.
  int exit_fd() const { return exit_fd_; }

 private:
  void finish(int status, bool reaped);

  ProcessRequest request_;
  pid_t pid_ = -1;
  int exit_fd_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::optional<ProcessOutcome> outcome_;
  bool stop_requested_ = false;
};

// Sleeps until one of `children` exits, `timeout_s` passes or a signal arrives.
void wait_for_any(const std::vector<const ChildProcess*>& children, double timeout_s);

// Starts the program and waits for it. Throws LaunchError when it cannot start.
ProcessOutcome run_process(const ProcessRequest& request);

// A program run to its end with its output (stdout and stderr together) kept.
struct CapturedRun {
  ProcessOutcome outcome;
  std::string output;  // at most the first `max_bytes`
};
// Runs `request` like run_process, its output going to request.log_path (or, when that is empty,
// a temporary file), which is read and removed afterwards. Throws LaunchError when it cannot start.
CapturedRun run_captured(ProcessRequest request, std::size_t max_bytes = std::size_t{1} << 20);

// Installs SIGINT/SIGTERM/SIGHUP handlers that make children stop and interrupt_requested()
// return true, instead of killing the harness and leaving mpirun or untracked jobs behind.
void install_interrupt_handlers();
bool interrupt_requested();

// Makes a write to a closed pipe or socket fail (EPIPE) instead of killing the harness with
// SIGPIPE: `harness run X | head -2` runs every point, and a Ctrl-C that ended `| tee log` first
// still leaves the harness to cancel its jobs and write its files. A handler, not SIG_IGN, so that
// the programs the harness starts get the default back when they exec; a SIGPIPE the caller
// ignores stays ignored.
void keep_running_when_output_closes();
// Flushes std::cout and says whether what was written to it may have been lost (its reader went
// away, its disk filled).
bool standard_output_lost();

// Searches PATH like execvp; "" when not found.
std::string find_program(const std::string& name);

// The last `lines` lines of a text file (fewer if it is shorter; none if it is missing), each cut
// to 1000 bytes.
std::vector<std::string> tail_lines(const std::string& path, std::size_t lines);
// The first `lines` lines, the same way.
std::vector<std::string> head_lines(const std::string& path, std::size_t lines);

}  // namespace harness
