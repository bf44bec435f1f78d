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
  std::string key;                  // the point's key hash: a cluster job's comment
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 0;           // 0: as the scheduler places them
  int threads_per_rank = 0;         // 0: the scheduler's cores per node / ranks on it
  // GPUs each node of the job needs: one per rank on it for a point on "cuda" (a rank uses the
  // GPU of its local rank, modulo the GPUs it sees); 0: none. A cluster scheduler asks for them.
  int gpus_per_node = 0;
  double time_limit_s = 0;          // 0: none
  double expected_s = 0;            // how long earlier runs of the point took; 0: unknown
  std::vector<std::string> argv;    // the program every rank runs, with its arguments
  // The MPI family of that program's build and the launcher configure found for it (mpi_build.h),
  // where it is another build than the running harness (a two-build sweep); "" otherwise.
  std::string mpi_family;
  std::string mpi_launcher;
  std::vector<std::pair<std::string, std::string>> environment;  // for every rank
  std::string log_path;             // everything the job prints
  std::string measurements_path;    // what rank 0 writes (the last argument of argv)
  std::string working_directory;    // "" = the harness's
  // Which submission of the point this is (the run's id): a cluster job's status file is its own,
  // so that an earlier job of the point still running cannot speak for this one. "" for jobs of a
  // ledger written before attempts were kept.
  std::string attempt;
};

// Where this submission's job writes its output: DIR/logs/<id>.<attempt>.log. It becomes the
// point's log (`log_path`) when the job ends with a record, so that an interrupted re-run leaves
// the earlier record's log as it was.
inline std::string attempt_log_path(const JobSpec& job) {
  if (job.attempt.empty()) return job.log_path;
  const std::string::size_type dot = job.log_path.rfind(".log");
  return dot == std::string::npos || dot + 4 != job.log_path.size()
             ? job.log_path + "." + job.attempt
             : job.log_path.substr(0, dot) + "." + job.attempt + ".log";
}

using JobId = int64_t;

// How a job ended, as its scheduler tells it (a local process's exit, a SLURM job's final state).
enum class JobEnd {
  kCompleted,     // exit status 0: the point's output decides whether it is ok
  kFailed,        // a non-zero exit status or a signal
  kTimeout,       // stopped by its time limit
  kCancelled,     // cancelled by someone other than this harness (scancel)
  kOutOfMemory,
  kNodeFailure,   // a node of the job failed (SLURM NODE_FAIL, BOOT_FAIL)
  kPreempted,
  kLost,          // vanished from the scheduler without a trace of how it ended
  kInterrupted,   // stopped by this harness (Ctrl-C, cancel()): the point leaves no record
};

// A job that has ended.
struct JobResult {
  JobId id = 0;
  JobEnd end = JobEnd::kFailed;
  // The scheduler's account of the end ("NODE_FAIL", "cancelled by scancel"); "" when the
  // outcome and the job's log say it all.
  std::string reason;
  ProcessOutcome outcome;    // how the job's launcher process ended (mpirun, srun, ...)
  double started_at = 0;     // wall clock, seconds since the epoch
  double finished_at = 0;
  std::string job_id;        // the scheduler's own id of the job, for records ("" locally)
  // The node the job's script ran on (a cluster's: its batch host, where rank 0 runs), as the job
  // itself wrote it; "" locally (this machine, or the local launcher's hosts).
  std::string host;
};

// The end of a local process: completed, failed, timed out or interrupted.
JobEnd job_end_of(const ProcessOutcome& outcome);

}  // namespace harness
