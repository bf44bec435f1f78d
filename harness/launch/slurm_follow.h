// How the SLURM launcher tells how a point's job ended. Files are the source of truth: the job
// script writes a status file per point (slurm/job.sh.in), from a trap when the job is stopped.
// The scheduler's word (one query per poll for the whole sweep) is needed only where the file
// cannot speak: a job that died without running the trap (a failed node), one stopped by a
// signal (cancelled, out of time, preempted), one that vanished (lost, never ok).
#pragma once

#include <optional>
#include <random>
#include <string>

#include "harness/launch/job.h"
#include "harness/launch/slurm_commands.h"

namespace harness {

// A point's status file, as far as it has been written.
struct PointStatusFile {
  bool started = false;
  double started_at = 0;
  std::string host;
  bool finished = false;
  double finished_at = 0;
  int exit_code = -1;
};

PointStatusFile parse_status_file(const std::string& text);
// Missing or unreadable: nothing started yet.
PointStatusFile read_status_file(const std::string& path);

// What the launcher remembers of a point's job between polls.
struct FollowedJob {
  std::string slurm_id;     // as squeue lists it: "1234", or "1234_3" for an array task
  bool packed = false;      // a step of a pack allocation (its job goes on after the point)
  double time_limit_s = 0;  // the point's own, enforced in the job script
  double submitted_at = 0;
  std::string batch_output;  // the job's own output (sbatch --output): what failed outside the points
  int unseen_queries = 0;   // consecutive queries that did not list the job
  int silent_queries = 0;   // consecutive queries that showed it ended while its file said nothing
  bool failure_read = false;  // a pack's point: its failure was read, a later query will judge it
};

struct JobVerdict {
  JobEnd end = JobEnd::kFailed;
  std::string reason;  // "" for a completed job: its record decides
};

// Decides a point's end from its file and, when a query ran this poll (`queried`), from what the
// scheduler said of its job (`seen`: null when the job was not listed). Nothing while it runs or
// while the evidence is not yet conclusive (a vanished or silent job must stay so for two
// queries, which gives a status file written at the last moment time to appear).
std::optional<JobVerdict> judge_job(FollowedJob& job, const PointStatusFile& status,
                                    const SchedulerJob* seen, bool queried);

// What a job asks SLURM for beyond its points' own limits (starting, the status lines): a job of
// one point asks for its limit plus this; the job script stops the point's ranks at its limit.
inline constexpr double kJobMarginS = 60;

// When a point's job ended, as far as anyone can tell: its status file's finish; without one (the
// job died without a word, or this harness adopted it after a restart, long after) `now`, but no
// later than the point could have run: its start, its limit and a job's margin. So a record's wall
// time, and how long a hung rank stood where it stood, are not counted up to the adoption.
double point_ended_at(const PointStatusFile& status, const FollowedJob& job, double now);

// When to ask the scheduler next: 2 s after a point ended or jobs were submitted, then doubling
// with up to 25% jitter (so that many harnesses do not ask in step) up to `cap_s`, which stays below
// the time a finished job remains listed (MinJobAge) so that no ending is missed.
class QueryBackoff {
 public:
  explicit QueryBackoff(double cap_s);
  void reset(double now);          // something happened: look again soon
  void queried(double now);        // a query ran: wait longer for the next
  bool due(double now) const { return now >= next_at_; }
  double next_at() const { return next_at_; }
  double interval_s() const { return interval_s_; }

 private:
  static constexpr double kFirstIntervalS = 2;
  double cap_s_;
  double interval_s_ = kFirstIntervalS;
  double next_at_ = 0;
  std::mt19937 random_;
};

// The cap for a cluster whose finished jobs stay listed for `min_job_age_s`.
double query_cap_s(double min_job_age_s);

}  // namespace harness
