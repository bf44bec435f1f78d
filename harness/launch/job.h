// A job: what a scheduler runs for one point, and how it ended.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/common/process.h"

namespace harness {

struct JobSpec {
  std::string name;                 // the point's id: job names, messages
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 0;           // 0: as the scheduler places them
  int threads_per_rank = 0;         // 0: the scheduler's cores per node / ranks on it
  double time_limit_s = 0;          // 0: none
  std::vector<std::string> argv;    // the program every rank runs, with its arguments
  std::vector<std::pair<std::string, std::string>> environment;  // for every rank
  std::string log_path;             // everything the job prints
  std::string working_directory;    // "" = the harness's
};

using JobId = int64_t;

// A job that has ended.
struct JobResult {
  JobId id = 0;
  ProcessOutcome outcome;    // how the job's launcher process ended (mpirun, srun, ...)
  double started_at = 0;     // wall clock, seconds since the epoch
  double finished_at = 0;
};

}  // namespace harness
