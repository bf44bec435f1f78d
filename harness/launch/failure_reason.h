// Why a job failed, in the words a user needs: which rank, which signal or exit code. Read from
// the end of the job's log, where Open MPI and the rank program say it; the launcher's own exit
// status when the log says nothing.
#pragma once

#include <string>
#include <vector>

#include "harness/common/process.h"

namespace harness {

// "rank 1 killed by signal 9 (Killed)"        Open MPI: "process rank 1 ... exited on signal 9"
// "rank 0: cannot open data file x.csv"       the rank program: "harness worker (rank 0): ..."
// "timed out after the 600 s limit"           the time limit (the log tail is kept for why)
// "mpirun exit code 3"                        otherwise: `launcher` and how it ended
std::string job_failure_reason(const ProcessOutcome& outcome, const std::vector<std::string>& log_tail,
                               const std::string& launcher);

}  // namespace harness
