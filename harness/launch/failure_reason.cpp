#include "harness/launch/failure_reason.h"

#include <regex>

#include <fmt/format.h>

namespace harness {

std::string job_failure_reason(const ProcessOutcome& outcome, const std::vector<std::string>& log_tail,
                               const std::string& launcher) {
  if (outcome.timed_out || outcome.interrupted) return outcome.describe();
  // Open MPI 4: "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9
  // (Killed)."
  static const std::regex rank_signal(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)( \([^)]*\))?)");
  // The rank program's last words: "harness worker (rank 0): <message>".
  static const std::regex rank_error(R"(harness worker \(rank (\d+)\): (.*))");
  // The rank program's own error is the cause; a signal line may follow it (mpirun stopping the
  // others), so look for it first.
  for (auto line = log_tail.rbegin(); line != log_tail.rend(); ++line) {
    std::smatch match;
    if (std::regex_search(*line, match, rank_error)) {
      return fmt::format("rank {}: {}", match[1].str(), match[2].str());
    }
  }
  for (auto line = log_tail.rbegin(); line != log_tail.rend(); ++line) {
    std::smatch match;
    if (std::regex_search(*line, match, rank_signal)) {
      return fmt::format("rank {} killed by signal {}{}", match[1].str(), match[2].str(), match[3].str());
    }
  }
  // srun: "srun: error: hnode2: task 1: Killed", "...: tasks 0-1: Exited with exit code 3". The
  // first such line is the cause; srun then terminates the others ("Terminated").
  static const std::regex srun_task(R"(srun: error: (\S+): tasks? ([0-9,\-]+): (.*))");
  for (const auto& line : log_tail) {
    std::smatch match;
    if (std::regex_search(line, match, srun_task)) {
      return fmt::format("rank {} on {}: {}", match[2].str(), match[1].str(), match[3].str());
    }
  }
  return launcher + " " + outcome.describe();
}

}  // namespace harness
