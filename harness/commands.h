// The subcommands of `harness`. Each returns the process exit status:
// 0 success, 1 a point failed or the harness hit a runtime error, 2 bad input (nothing
// launched), 130 interrupted by Ctrl-C (completed points and the summary so far are kept).
#pragma once

#include <string>
#include <vector>

namespace harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;

struct RunOptions {
  std::string experiment_path;
  std::string out_dir;                    // "" = results/<name>/<timestamp>
  std::vector<std::string> command_line;  // for provenance
};

int run_command(const RunOptions& options);
int plan_command(const std::string& experiment_path);

}  // namespace harness
