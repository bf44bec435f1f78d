// Why a job failed, in the words a user needs: which rank, which signal or exit code. Read from
// the end of the job's log, where Open MPI and the rank program say it; the launcher's own exit
// status when the log says nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/common/process.h"

namespace harness {

// "rank 1: SIGSEGV (segmentation fault) at address 0x0"
//                                             a rank's crash report (rank/crash_report.h)
// "rank 1 killed by signal 9 (Killed)"        Open MPI: "process rank 1 ... exited on signal 9"
// "rank 0: cannot open data file x.csv"       the rank program: "harness worker (rank 0): ..."
// "timed out after the 600 s limit"           the time limit (the log tail is kept for why)
// "mpirun exit code 1: There are not enough slots available in the system to satisfy the 4
//  slots that were requested by the application: harness"
//                                              the launcher's own message (launcher_message)
// "mpirun exit code 255: no rank started: mpirun could not start its daemon on every host (the
//  remote shell said: ssh: Could not resolve hostname nodeb: Name or service not known)"
//                                              a host mpirun could not reach
// "mpirun exit code 3"                        otherwise: `launcher` and how it ended
// The rank that failed first is named, not another that failed after it (failure_reason.cpp has
// the order). `log_head`: the log's first lines, where a launcher that fails before starting the
// ranks explains why (its message may be longer than the tail). `rank_errors`: the rank program's
// lines of the whole log, in order (rank_error_lines); when empty, those of the head and tail.
std::string job_failure_reason(const ProcessOutcome& outcome, const std::vector<std::string>& log_tail,
                               const std::string& launcher, const std::vector<std::string>& log_head = {},
                               const std::vector<std::string>& rank_errors = {});

// The lines of the log at `log_path` in which the rank program said why it stopped ("harness
// worker (rank N): ..."), in order: the first 64, each cut to 1000 bytes.
std::vector<std::string> rank_error_lines(const std::string& log_path);

// The launcher a job's command runs, for its reason ("mpirun", "srun"): the command's first word,
// past `env NAME=VALUE ...`; "job" for an empty command.
std::string launcher_name(const std::vector<std::string>& command);

// What the launcher itself said went wrong, in one line of at most about 300 characters: the
// first paragraph of Open MPI's first help message (printed between lines of dashes; with the
// next paragraph when it ends in a colon), or the first "srun: error:" / "sbatch: error:" line
// that is not about a task. "" when there is none, or only messages that a rank's exit already
// explains ("Primary job terminated normally, but 1 process returned ...").
std::string launcher_message(const std::vector<std::string>& log);

// A full disk fails a job in a way whose own message is lost with it (the rank's error cannot be
// written to the log it would go to: "mpirun exit code 1" is all that is left). When the file
// system of `directory` (where the job's log and measurements go) has under 1 MiB free, what to
// add to the reason: "; the file system of DIR has 4 KiB free: what the job wrote there may be cut
// short"; "" otherwise, or when the file system cannot be asked.
std::string full_disk_remark(const std::string& directory);
std::string full_disk_remark(const std::string& directory, std::uintmax_t available_bytes);

}  // namespace harness
