// SweepRunner's jobs in flight: the ledger that remembers them for a later run, adopting the jobs
// an earlier run left, collecting them for `harness status`, cancelling them, and the files each
// writes in logs/ beside the point's (taken up, dropped, or removed once stale).
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/rank_progress.h"
#include "harness/common/text.h"
#include "harness/launch/progress.h"
#include "harness/launch/sweep_runner.h"

namespace harness {
namespace fs = std::filesystem;

namespace {

// How long a one-shot `harness status` waits for the scheduler's next query (its queries start
// 2 s apart, slurm_follow.h's QueryBackoff) to judge a job that one query saw end.
constexpr double kSecondQueryWaitS = 3;

Json launcher_json(const LauncherSpec& spec) {
  Json json = spec.options.is_object() ? spec.options : Json::object();
  json["name"] = spec.name;
  return json;
}

}  // namespace

void SweepRunner::adopt_ledger_jobs(const std::vector<const Point*>& candidates) {
  ledger_ = read_ledger(directory_);
  refuse_jobs_of_another_launcher(directory_, ledger_, scheduler_.name());
  if (ledger_.entries.empty()) ledger_.launcher = launcher_json(experiment_.launcher);
  scheduler_.prepare({directory_.jobs_dir(), ledger_.sweep_id, fs::current_path().string()});
  std::set<std::string> followed_ids;  // scheduler ids of the jobs adopted (a pack serves several points)
  std::vector<const LedgerEntry*> left_the_sweep;
  for (const auto& entry : ledger_.entries) {
    const auto point = std::find_if(candidates.begin(), candidates.end(), [&](const Point* candidate) {
      return candidate->id == entry.point_id && candidate->key.hash() == entry.key;
    });
    if (point == candidates.end()) {
      // A point with a record is done; one whose settings changed or that was removed from the
      // experiment is no longer in the sweep, and its job would run on with no one following it.
      const bool in_sweep = std::any_of(points_.begin(), points_.end(), [&](const Point& p) {
        return p.id == entry.point_id && p.key.hash() == entry.key;
      });
      if (!in_sweep) left_the_sweep.push_back(&entry);
      continue;
    }
    followed_ids.insert(entry.external_id);
    InFlight job;
    job.point = *point;
    job.job = job_for(**point, directory_, options_.rank_programs, run_id_);
    job.job.measurements_path = entry.measurements_path;
    // The submitted job's output path (the argument after --output; --timeline may follow it).
    const auto output = std::find(job.job.argv.begin(), job.job.argv.end(), "--output");
    if (output != job.job.argv.end() && std::next(output) != job.job.argv.end()) {
      *std::next(output) = entry.measurements_path;
    }
    job.job.attempt = entry.attempt;
    job.command = entry.command;
    job.label = label(**point);
    job.submitted_at = entry.submitted_at;
    job.build = entry.build;
    if (const auto id = scheduler_.adopt(job.job, entry.external_id, entry.submitted_at)) {
      in_flight_.emplace(*id, std::move(job));
    }
  }
  cancel_jobs_that_left_the_sweep(left_the_sweep, followed_ids);
  save_ledger();  // without the entries of points that have records, or that left the sweep and were cancelled
}

void SweepRunner::cancel_jobs_that_left_the_sweep(const std::vector<const LedgerEntry*>& entries,
                                                  const std::set<std::string>& followed_ids) {
  std::vector<JobId> ids;
  std::map<JobId, const LedgerEntry*> entry_of;
  std::vector<std::string> points;
  for (const LedgerEntry* entry : entries) {
    // A job that still runs points of the sweep (a pack) is left to them.
    if (followed_ids.count(entry->external_id)) continue;
    JobSpec job;
    job.name = entry->point_id;
    const auto id = scheduler_.adopt(job, entry->external_id);
    if (!id) continue;
    ids.push_back(*id);
    entry_of[*id] = entry;
    points.push_back(entry->point_id);
  }
  if (ids.empty()) return;
  const CancelOutcome outcome = scheduler_.cancel_all(ids);
  for (const JobId id : outcome.not_cancelled) unfollowed_entries_.push_back(*entry_of.at(id));
  for (const auto& [id, entry] : entry_of) {
    if (std::find(outcome.not_cancelled.begin(), outcome.not_cancelled.end(), id) == outcome.not_cancelled.end()) {
      remove_files_of_cancelled(*entry);
    }
  }
  out_ << fmt::format("harness: {} job(s) of point(s) no longer in the experiment ({}{}) {}\n", ids.size(),
                      fmt::join(points.begin(), points.begin() + std::min<std::ptrdiff_t>(points.size(), 5), ", "),
                      points.size() > 5 ? ", ..." : "",
                      outcome.not_cancelled.empty()
                          ? "cancelled"
                          : fmt::format("to cancel: {} could not be ({}); they stay in {} for `harness cancel {}`",
                                        outcome.not_cancelled.size(), outcome.error, directory_.ledger_path(),
                                        directory_.path()));
}

void SweepRunner::save_ledger() {
  if (!scheduler_.jobs_outlive_harness()) return;
  // Called after every poll: rewritten (and fsync'd) only when the jobs in flight changed.
  std::set<JobId> ids;
  for (const auto& [id, job] : in_flight_) ids.insert(id);
  if (saved_ledger_ids_ == ids) return;
  ledger_.entries = unfollowed_entries_;
  for (const auto& [id, job] : in_flight_) {
    ledger_.entries.push_back({job.point->id, job.point->key.hash(), scheduler_.external_id(id),
                               job.job.measurements_path, job.command, job.submitted_at, job.build,
                               job.job.attempt});
  }
  write_ledger(directory_, ledger_);
  saved_ledger_ids_ = std::move(ids);
}

void SweepRunner::settle_measurements() {
  std::set<std::string> in_use;
  for (const auto& [id, job] : in_flight_) in_use.insert(job.job.measurements_path);
  for (const std::string& point_id : settled_) {
    for (const std::string& file : directory_.measurements_files(point_id)) {
      if (!in_use.count(file)) remove_if_present(file);
    }
  }
  remove_stale_rank_slots_and_logs(in_use);
  settled_.clear();
}

void SweepRunner::remove_stale_rank_slots_and_logs(const std::set<std::string>& in_use) {
  // Earlier runs' rank slots, left by a harness that stopped before it read them; also those of a
  // run whose rank 0 never wrote measurements (a kill during setup), so not found through them.
  // Their jobs' own logs (<id>.<attempt>.log) too: the point's log is <id>.log. One listing of
  // logs/ for all the settled points.
  if (settled_.empty()) return;
  std::set<std::string> in_use_paths;
  for (const std::string& measurements : in_use) in_use_paths.insert(rank_progress_directory(measurements));
  for (const auto& [id, job] : in_flight_) {
    in_use_paths.insert(attempt_log_path(job.job));
    in_use_paths.insert(trace_written_by(job.command));
  }
  const std::string suffix = rank_progress_directory(".measurements.json");
  std::vector<fs::path> stale;
  std::error_code error;
  for (fs::directory_iterator it(directory_.logs_dir(), error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const std::size_t dot = name.find('.');
    if (dot == std::string::npos || !settled_.count(name.substr(0, dot)) ||
        in_use_paths.count(it->path().string())) {
      continue;
    }
    const bool rank_slots = name.size() > dot + suffix.size() && name.ends_with(suffix);
    const bool attempt_log = name.ends_with(".log") && name.size() > dot + 4;
    const bool run_trace = name.ends_with(".trace.json") && name.size() > dot + 11;
    if (rank_slots || attempt_log || run_trace) stale.push_back(it->path());
  }
  for (const fs::path& folder : stale) {
    std::error_code ignored;
    fs::remove_all(folder, ignored);
  }
}

std::string trace_written_by(const std::vector<std::string>& command) {
  const auto flag = std::find(command.begin(), command.end(), "--timeline");
  return flag == command.end() || std::next(flag) == command.end() ? std::string() : *std::next(flag);
}

void SweepRunner::take_up_job_files(const InFlight& job) const {
  const auto take = [](const std::string& own, const std::string& point_file) {
    if (own.empty() || own == point_file) return;
    std::error_code moved;
    fs::rename(own, point_file, moved);
    if (moved == std::errc::no_such_file_or_directory) remove_if_present(point_file);
  };
  take(attempt_log_path(job.job), job.job.log_path);  // the record's reason quotes it
  take(trace_written_by(job.command), directory_.timeline_path(job.point->id));
}

void SweepRunner::drop_job_files(const InFlight& job) const {
  for (const std::string& own : {attempt_log_path(job.job), trace_written_by(job.command)}) {
    if (!own.empty() && own != job.job.log_path && own != directory_.timeline_path(job.point->id)) {
      remove_if_present(own);
    }
  }
}

void SweepRunner::remove_files_of_cancelled(const LedgerEntry& entry) const {
  // Only in this directory's logs/: the ledger's paths are absolute, and a copied results
  // directory's ledger names the original's files.
  const std::string logs = directory_.logs_dir() + "/";
  const auto remove = [&](const std::string& path) {
    if (path.starts_with(logs)) remove_if_present(path);
  };
  // A ledger of an older harness names no attempt: its job wrote the point's own log, which an
  // earlier record may quote.
  if (!entry.attempt.empty()) {
    JobSpec job;
    job.log_path = directory_.log_path(entry.point_id);
    job.attempt = entry.attempt;
    remove(attempt_log_path(job));
  }
  const std::string trace = trace_written_by(entry.command);
  if (trace != directory_.timeline_path(entry.point_id)) remove(trace);
  if (entry.measurements_path.starts_with(logs)) {
    remove_if_present(entry.measurements_path);
    std::error_code ignored;
    fs::remove_all(rank_progress_directory(entry.measurements_path), ignored);
  }
}

void SweepRunner::cancel_all_in_flight() {
  std::vector<JobId> ids;
  for (const auto& [id, job] : in_flight_) ids.push_back(id);
  if (ids.empty()) return;
  const CancelOutcome outcome = scheduler_.cancel_all(ids);
  not_cancelled_.insert(outcome.not_cancelled.begin(), outcome.not_cancelled.end());
  if (!outcome.not_cancelled.empty()) {
    out_ << fmt::format("harness: {} job(s) could not be cancelled ({}); they stay in {}: `harness cancel {}` "
                        "tries again\n",
                        outcome.not_cancelled.size(), outcome.error, directory_.ledger_path(), directory_.path());
  }
}

int SweepRunner::cancel_in_flight() {
  loop(Submit::kNone, false);
  const std::size_t asked = in_flight_.size();
  if (asked == 0) return 0;
  cancel_all_in_flight();
  Progress progress(0, false, scheduler_.max_parallel(), out_);
  // The scheduler reports jobs it cancelled as interrupted (or completed, if they finished first).
  for (int round = 0; round < 30 && in_flight_.size() > not_cancelled_.size(); ++round) {
    for (const JobResult& ended : scheduler_.poll(1.0)) record_ended(ended, progress);
  }
  save_ledger();
  settle_measurements();
  if (!not_cancelled_.empty()) {
    throw LaunchError(fmt::format("{} of {} job(s) could not be cancelled; they stay in {}", not_cancelled_.size(),
                                  asked, directory_.ledger_path()));
  }
  return static_cast<int>(asked);
}

SweepOutcome SweepRunner::collect() {
  SweepOutcome result = loop(Submit::kNone, false);
  // A job the scheduler listed as ended (or stopped listing) is judged on the next query, when its
  // status file has had time to appear: ask again now, or a job cancelled while queued or lost
  // with its node would stay "in flight" to every `harness status`. The queries back off from 2 s.
  if (scheduler_.judging()) {
    Progress progress(0, false, scheduler_.max_parallel(), out_);
    for (int round = 0; round < 3 && scheduler_.judging() && !interrupt_requested(); ++round) {
      for (const JobResult& ended : scheduler_.poll(kSecondQueryWaitS)) {
        if (record_ended(ended, progress)) ++result.failed;
      }
    }
    save_ledger();
    settle_measurements();
    result.in_flight = static_cast<int>(in_flight_.size());
  }
  for (const auto& point : points_) {
    PointState state;
    state.point = &point;
    const auto job = std::find_if(in_flight_.begin(), in_flight_.end(),
                                  [&](const auto& entry) { return entry.second.point == &point; });
    if (job != in_flight_.end()) {
      state.state = scheduler_.describe(job->first);
    } else if (fs::exists(directory_.record_path(point.id))) {
      state.done = true;
      try {
        const PointRecord record = record_from_json(read_json_file(directory_.record_path(point.id)),
                                                    directory_.record_path(point.id));
        state.state = record.ok() ? fmt::format("ok ({})", format_duration(record.launch.wall_time_s))
                                  : fmt::format("{}: {}", status_name(record.status), record.reason);
      } catch (const Error& error) {
        state.state = fmt::format("unreadable record: {}", error.what());
      }
    } else {
      state.state = "not submitted";
    }
    result.states.push_back(std::move(state));
  }
  return result;
}

}  // namespace harness
