// The point loop of `harness run`: turns the experiment's points into jobs, keeps up to the
// scheduler's max_parallel of them in flight, turns each ended job into a record (written
// atomically to points/<id>.json) and shows the progress. Resumes: a point whose complete record
// (same PointKey, same harness version) is already in the directory is kept, not run. On Ctrl-C
// every job in flight is cancelled and the points finished so far are kept.
//
// The caller holds the directory's lock (results_directory.h) while a runner writes into it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "harness/launch/scheduler.h"
#include "harness/results/record.h"
#include "harness/results/results_directory.h"
#include "harness/study/sweep.h"

namespace harness {

struct SweepOptions {
  bool fresh = false;                     // run every point, even those with a complete record
  std::vector<std::string> command_line;  // for the records' provenance
  std::string rank_program;               // the `harness` binary whose `worker` the ranks run
  bool live_progress = false;             // redraw progress lines (a terminal)
};

struct SweepOutcome {
  int kept = 0;
  int ran = 0;
  int failed = 0;
  bool interrupted = false;
};

class SweepRunner {
 public:
  SweepRunner(const Experiment& experiment, const std::vector<Point>& points, Scheduler& scheduler,
              const ResultsDirectory& directory, SweepOptions options, std::ostream& out);
  SweepOutcome run();

  // The job that runs `point` (for dry runs too: scheduler.command_for(job_for(...))).
  static JobSpec job_for(const Point& point, const ResultsDirectory& directory,
                         const std::string& rank_program, const std::string& run_id);

 private:
  struct InFlight;
  // A complete record of `point` from an earlier run, moved to the point's own id; false if none.
  bool adopt_earlier_record(const Point& point, const std::vector<StoredRecord>& stored);
  // Moves files in points/ that are not complete records aside (warning once), so that their
  // points run again and no report trips over them.
  void set_aside_unreadable(const std::vector<StoredRecord>& stored);
  PointRecord finish(const InFlight& job, const JobResult& result, std::string& remark);
  std::string label(const Point& point) const;

  const Experiment& experiment_;
  const std::vector<Point>& points_;
  Scheduler& scheduler_;
  ResultsDirectory directory_;
  SweepOptions options_;
  std::ostream& out_;
  std::string run_id_;
};

}  // namespace harness
