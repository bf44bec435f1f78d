// The point loop of `harness run` and `harness status`: turns the experiment's points into jobs,
// keeps up to the scheduler's max_parallel of them in flight, turns each ended job into a record
// (written atomically to points/<id>.json) and shows the progress.
//
// Resuming: a point whose complete record (same PointKey, same harness version and, for a point of a
// named build, the same build binary and commit) is already in the
// directory is kept, not run; a point whose job is still in flight from an earlier harness (the
// directory's ledger, job_ledger.h; a cluster's jobs outlive the harness) is followed, not
// submitted again, even when an older record of its point is still there. On Ctrl-C every job in
// flight is cancelled and the points finished so far are kept.
//
// Durability: a point that runs again has its earlier records set aside before its job is
// submitted (superseded_records.h: renamed, not deleted), so that a refused submission, Ctrl-C or
// a failure leaves them, and no report takes them for this run's; a new ok record removes them, a
// later run without --fresh takes an ok one back. Rank 0's measurements files stay until the
// record is durable and the saved ledger no longer names the job. A point whose record cannot be
// written fails.
//
// The caller holds the directory's lock (results_directory.h) while a runner writes into it.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/launch/job_ledger.h"
#include "harness/launch/rank_programs.h"
#include "harness/launch/scheduler.h"
#include "harness/results/record.h"
#include "harness/results/results_directory.h"
#include "harness/study/sweep.h"

namespace harness {

struct SweepOptions {
  bool fresh = false;                     // run every point, even those with a complete record
  // Keep also the points that ended in a way running them unchanged would repeat (timeout, out
  // of memory, cancelled); run again only the failed, lost, retryable and missing ones.
  bool retry_failed = false;
  bool detach = false;                    // submit, then return without following the jobs
  std::vector<std::string> command_line;  // for the records' provenance
  RankPrograms rank_programs;             // the `harness` binary whose `worker` each point's ranks run
  bool live_progress = false;             // redraw progress lines (a terminal)
};

// Where a point stands, for `harness status`.
struct PointState {
  const Point* point = nullptr;
  std::string state;  // "ok", "timeout", "running on hnode1 (job 12, 3 s)", "not submitted", ...
  bool done = false;  // it has a record
};

struct SweepOutcome {
  int kept = 0;
  // Of those, records that did not complete (kept by --retry-failed: timed out, out of memory,
  // cancelled), by status name.
  std::map<std::string, int> kept_not_ok;
  int ran = 0;
  int failed = 0;
  int in_flight = 0;  // jobs still running when the runner returned (detached, or status)
  // Points whose job ended but whose record could not be written (counted in failed too); their
  // measurements stay in logs/.
  int records_not_written = 0;
  // Points this run left without an ok record whose earlier ok record waits aside
  // (points/<id>.json.superseded): a run without --fresh takes it back.
  int waiting_aside = 0;
  bool interrupted = false;
  std::vector<PointState> states;  // by `collect`
};

// The trace file a job's command writes (the argument after --timeline), or "".
std::string trace_written_by(const std::vector<std::string>& command);

class SweepRunner {
 public:
  SweepRunner(const Experiment& experiment, const std::vector<Point>& points, Scheduler& scheduler,
              const ResultsDirectory& directory, SweepOptions options, std::ostream& out);

  // `harness run`: submits every point without a kept record or a job in flight, then follows
  // them to the end (or returns at once with options.detach). Throws ConfigError when the
  // directory's jobs in flight belong to another launcher.
  SweepOutcome run();
  // `harness status`: follows the jobs in flight once (no waiting, nothing submitted), records the
  // points whose jobs ended, and says where every point stands.
  SweepOutcome collect();
  // `harness cancel`: records what has ended, then cancels every job in flight (their points
  // leave no record and run again on resume). Returns how many jobs it cancelled; throws
  // LaunchError when some could not be cancelled (they stay in the ledger).
  int cancel_in_flight();

  // The job that runs `point` (for dry runs too: scheduler.command_for(job_for(...))).
  static JobSpec job_for(const Point& point, const ResultsDirectory& directory,
                         const RankPrograms& rank_programs, const std::string& run_id);

 private:
  struct InFlight {
    const Point* point = nullptr;
    JobSpec job;
    std::vector<std::string> command;
    std::string label;
    double submitted_at = 0;
    std::optional<BuildProvenance> build;  // as probed when it was submitted
  };
  enum class Submit { kAll, kNone };
  SweepOutcome loop(Submit submit, bool follow);
  // loop()'s steps.
  struct Triage {
    std::vector<const Point*> without_record;  // no record kept (or a job in the ledger)
    std::map<const Point*, PointStatus> kept;  // earlier records this run keeps
    std::vector<StoredRecord> stored;          // what points/ held
  };
  // A record set aside (superseded_records.h).
  struct RecordAside {
    std::string path;
    bool ok = false;
  };
  Triage triage_points(Submit submit, SweepOutcome& result);
  // How long each point took before, by estimate_sweep.
  std::map<const Point*, double> earlier_durations_s() const;
  // The points of without_record that no job in flight follows.
  std::vector<const Point*> points_to_submit(const std::vector<const Point*>& without_record) const;
  void report_kept_and_adopted(const std::map<const Point*, PointStatus>& kept, class Progress& progress) const;
  void submit_next_batch(const std::vector<const Point*>& to_run, std::size_t& next,
                         const std::map<const Point*, double>& earlier_s, class Progress& progress,
                         SweepOutcome& result);
  // The status of a record of `point` from an earlier run that this run keeps (moved to the
  // point's own id; one set aside is taken back), or nothing; `stored` (records in points/) and
  // `aside` (records set aside) by their points' keys (by_point_key).
  std::optional<PointStatus> adopt_earlier_record(const Point& point,
                                                  const std::multimap<PointKey, const StoredRecord*>& stored,
                                                  const std::multimap<PointKey, const StoredRecord*>& aside);
  // Sets aside every record of `stored` whose key is that of a point in `to_run`, before their
  // jobs are submitted.
  void set_aside_records_of(const std::vector<const Point*>& to_run, const std::vector<StoredRecord>& stored);
  // Sets one record of the point with `key` aside (a warning when it cannot be).
  void set_aside(const PointKey& key, const StoredRecord& file);
  // Sets aside a record at `point`'s own path when its job ends, before the job's log becomes the
  // point's: a run sets its points' records aside when it submits their jobs, but a job followed
  // from the ledger may find one there (left by an older harness, or put back by hand).
  void set_aside_own_record(const Point& point);
  void forget_aside(const PointKey& key, const std::string& path);
  // Removes the records set aside of `point`: it has a new ok record.
  void remove_superseded_of(const Point& point);
  // How many points neither kept nor recorded ok by this run have an ok record waiting aside.
  int points_waiting_aside(const Triage& triage) const;
  static std::multimap<PointKey, const StoredRecord*> by_point_key(const std::vector<StoredRecord>& stored);
  bool keeps(const PointRecord& record) const;
  // Moves files in points/ that are not complete records aside (warning once), so that their
  // points run again and no report trips over them.
  void set_aside_unreadable(const std::vector<StoredRecord>& stored);
  // Reads the ledger and prepares the scheduler; adopts the ledger's jobs of points without a kept
  // record into in_flight_.
  void adopt_ledger_jobs(const std::vector<const Point*>& candidates);
  // Cancels the jobs of ledger `entries` whose points left the sweep (the experiment changed
  // since they were submitted), but for jobs that also run followed points (`followed_ids`).
  void cancel_jobs_that_left_the_sweep(const std::vector<const LedgerEntry*>& entries,
                                       const std::set<std::string>& followed_ids);
  // What the job of a ledger entry cancelled by cancel_jobs_that_left_the_sweep wrote in logs/: its
  // log, trace, measurements and rank slots (a run of a point that is no longer in the sweep). A
  // file the dying job writes after this can remain.
  void remove_files_of_cancelled(const LedgerEntry& entry) const;
  void save_ledger();
  // Removes the measurements files of the points in settled_ (their records are durable and the
  // saved ledger no longer names their jobs), except those of jobs in flight.
  void settle_measurements();
  // Removes the rank slot folders, job logs (<id>.<attempt>.log) and traces of the points in settled_
  // from logs/, except those of jobs in flight (in_use: their measurements files).
  void remove_stale_rank_slots_and_logs(const std::set<std::string>& in_use);
  // Cancels every job in flight; those the scheduler could not stop go into not_cancelled_.
  void cancel_all_in_flight();
  // The files an ended job wrote apart from the point's, its log (<id>.<attempt>.log) and trace
  // (<id>.<run>.trace.json), become the point's. A job that wrote none (cancelled while queued,
  // failed before its trace) leaves no earlier run's to be taken for its own.
  void take_up_job_files(const InFlight& job) const;
  // What an interrupted job wrote apart from the point's files goes; an earlier record keeps its
  // own.
  void drop_job_files(const InFlight& job) const;
  // Records an ended job (or says it was interrupted); true when its point failed.
  bool record_ended(const JobResult& ended, class Progress& progress);
  std::string label(const Point& point) const;

  const Experiment& experiment_;
  const std::vector<Point>& points_;
  Scheduler& scheduler_;
  ResultsDirectory directory_;
  SweepOptions options_;
  std::ostream& out_;
  std::string run_id_;
  JobLedger ledger_;
  std::map<JobId, InFlight> in_flight_;
  std::set<std::string> settled_;  // ids of points whose measurements files may go
  std::multimap<PointKey, RecordAside> superseded_;  // records set aside, by their points' keys
  int records_not_written_ = 0;
  std::set<JobId> not_cancelled_;  // asked to cancel, still running: kept in the ledger
  std::optional<std::set<JobId>> saved_ledger_ids_;  // the jobs the ledger on disk names
  // Jobs of points that left the sweep and that scancel could not stop: kept in the ledger, not
  // followed, for `harness cancel`.
  std::vector<LedgerEntry> unfollowed_entries_;
};

}  // namespace harness
