// A results directory (results/README.md lists every file):
//   DIR/experiment.json   the experiment file as run
//   DIR/points/<id>.json  one record per point (record.h)
//   DIR/logs/<id>.log     everything the point's job printed
//   DIR/summary.csv, DIR/stats.csv, DIR/plots/   rebuilt from the records by the reports
//   DIR/.lock             held by the one `harness run` writing here
//   DIR/jobs/             jobs that outlive the harness (a cluster's): ledger.json lists those in
//                         flight; the scheduler keeps its job scripts and status files there
// Records and summaries are written to a temporary name and renamed, so a reader never sees half
// of one, even when the harness is killed.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/common/errors.h"
#include "harness/results/record.h"

namespace harness {

class ResultsDirectory {
 public:
  explicit ResultsDirectory(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  std::string experiment_copy() const { return path_ + "/experiment.json"; }
  std::string points_dir() const { return path_ + "/points"; }
  std::string logs_dir() const { return path_ + "/logs"; }
  std::string plots_dir() const { return path_ + "/plots"; }
  std::string summary_csv() const { return path_ + "/summary.csv"; }
  std::string stats_csv() const { return path_ + "/stats.csv"; }
  std::string lock_file() const { return path_ + "/.lock"; }
  std::string jobs_dir() const { return path_ + "/jobs"; }
  std::string ledger_path() const { return jobs_dir() + "/ledger.json"; }
  std::string record_path(const std::string& id) const { return points_dir() + "/" + id + ".json"; }
  std::string log_path(const std::string& id) const { return logs_dir() + "/" + id + ".log"; }
  // Where rank 0 of point `id` writes its measurements during run `run_id`: unique to the run, so
  // that no other run's file can pass for this one's.
  std::string measurements_path(const std::string& id, const std::string& run_id) const {
    return logs_dir() + "/" + id + "." + run_id + ".measurements.json";
  }
  // Every run's measurements file of point `id` in logs/ (measurements_path), in name order.
  std::vector<std::string> measurements_files(const std::string& id) const;
  // The point's timeline (setting "timeline"), from the run of its record.
  std::string timeline_path(const std::string& id) const { return logs_dir() + "/" + id + ".trace.json"; }
  // Where run `run_id`'s job of the point writes it; it becomes timeline_path(id) with the record.
  std::string timeline_path(const std::string& id, const std::string& run_id) const {
    return logs_dir() + "/" + id + "." + run_id + ".trace.json";
  }

  // Whether `relative` (a path inside a results directory, as "points/p000-ab.json") names a file
  // the harness writes there: the experiment copy, the tables and reports, the lock, or anything
  // in points/, logs/, plots/ or jobs/. Other commands must never write over those.
  static bool written_by_harness(const std::string& relative);

  // Creates the directories. Throws ConfigError naming the directory when it cannot.
  void create() const;
  // For `harness run --out`: a new or empty directory (or one holding only the lock and empty
  // folders a run left when it stopped before writing experiment.json), or one holding results of
  // the experiment named `experiment_name`; anything else is refused (ConfigError), so that no other study's
  // summary is overwritten and no results land among unrelated files.
  void check_reusable_for(const std::string& experiment_name) const;
  // Throws ConfigError when experiment.json is a symbolic link or anything but a regular file: a
  // link's target is never read on the directory's behalf (a missing one passes).
  void require_own_experiment_copy() const;
  // What create() would refuse, found without creating anything (plan, run --dry-run): the
  // nearest existing folder on the path is not a writable directory. Throws ConfigError.
  void check_creatable() const;

 private:
  std::string path_;
};

// Why the lock of results directory `directory` was not taken, from flock's `error`: another run
// holds it (EWOULDBLOCK; `holder` is the line that run wrote in it), the file system has no locks
// (ENOLCK, ENOSYS, ...), or anything else with its errno text.
std::string lock_failure_message(const std::string& directory, int error, const std::string& holder);

// Another process holds the directory's lock (the message names it). Any other failure to lock is
// a plain ConfigError.
class DirectoryInUse : public ConfigError {
 public:
  DirectoryInUse(const std::string& message, std::string holder) : ConfigError(message), holder_(std::move(holder)) {}
  // The line the holding run wrote in the lock ("pid P on HOST since TIME: COMMAND"), or "".
  const std::string& holder() const { return holder_; }

 private:
  std::string holder_;
};

// The directory cannot be written (a read-only file system, no permission): it cannot be locked,
// nor can anything be recorded in it; what it holds can still be read.
class DirectoryNotWritable : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// The lock of a results directory, held for as long as this object lives (flock(2): released
// when the process ends, however it ends). Read-only commands (plot) do not take it.
class DirectoryLock {
 public:
  // Throws DirectoryInUse "--out DIR: in use by another harness run (pid P on HOST since TIME:
  // COMMAND); ..." when another process holds it; DirectoryNotWritable when the directory cannot
  // be written; ConfigError when `.lock` is a link or not a file, or cannot be locked
  // (lock_failure_message).
  DirectoryLock(const ResultsDirectory& directory, const std::vector<std::string>& command_line);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

// A file in DIR/points: its typed record, or why it is not a readable one.
struct StoredRecord {
  std::string path;
  std::optional<PointRecord> record;
  std::string problem;  // "" when record is set
};

// Every *.json in DIR/points, in file name order.
std::vector<StoredRecord> read_stored_records(const ResultsDirectory& directory);

// A name for this run, unique on this machine: "<UTC time>-<pid>".
std::string new_run_id();

}  // namespace harness
