// Helpers of the end-to-end tests: the real `harness` binary run as a user runs it.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "harness/common/process.h"
#include "tests/common/read_text.h"

namespace harness::e2e {

namespace fs = std::filesystem;

struct HarnessRun {
  ProcessOutcome outcome;
  std::vector<std::string> output;  // stdout and stderr
};

// A new empty directory under the temporary directory.
fs::path scratch(const std::string& name);

// The harness with `arguments`, started in the directory that holds `log`, as a user would from
// their project, with `environment` added to its own.
ProcessRequest harness_request(const std::vector<std::string>& arguments, const fs::path& log,
                               const std::vector<std::pair<std::string, std::string>>& environment = {});

// Runs harness_request(...) to its end.
HarnessRun run_harness(const std::vector<std::string>& arguments, const fs::path& log,
                       const std::vector<std::pair<std::string, std::string>>& environment = {});

// A copy of the harness under test as DIRECTORY/harness, with its rank program beside it
// (DIRECTORY/harness-worker and harness-comm-worker, which `harness worker` runs); returns the
// harness's path.
fs::path copy_harness_build(const fs::path& directory);

// `text` as DIRECTORY/experiment.json.
fs::path write_experiment(const fs::path& directory, const std::string& text);

// One CSV line split into fields, with RFC 4180 quoting ("a,b" and "say ""hi""").
std::vector<std::string> csv_fields(const std::string& line);

// The rows of a CSV file (summary.csv, stats.csv), as column name -> value; a test failure when the
// file cannot be read.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path);

std::string joined(const std::vector<std::string>& lines);

// The process of the rank program of the harness under test with MPI rank `rank` (Open MPI tells
// each its rank in OMPI_COMM_WORLD_RANK); 0 when there is none.
pid_t find_rank_process(int rank);

// What a failed assertion on a run should show: its output, then the last lines of every point
// log the output names ("    log: PATH" under a FAILED point), where a rank's own error and
// Open MPI's backtrace are. A crash seen once in CI is then diagnosable from CI's output alone.
std::string explained(const HarnessRun& run);

}  // namespace harness::e2e
