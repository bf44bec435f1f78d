// SweepRunner's earlier records: which points a run keeps (an earlier record in place, moved, or
// set aside by an earlier run and taken back), which it runs again, setting their earlier records
// aside first (superseded_records.h), and files in points/ that are no records.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/version.h"
#include "harness/launch/sweep_runner.h"
#include "harness/results/superseded_records.h"

namespace harness {
namespace fs = std::filesystem;

namespace {

// "<path>: <problem>" read errors name the file first; a message that names it already says so
// once.
std::string without_path(const std::string& problem, const std::string& path) {
  return problem.rfind(path + ": ", 0) == 0 ? problem.substr(path.size() + 2) : problem;
}

// Whether a record's build is the build a point would run now: the same binary (its path and
// bytes), of the same version and commit. A rebuilt base must be measured again.
bool same_build(const std::optional<BuildProvenance>& recorded, const std::optional<BuildProvenance>& now) {
  if (!recorded || !now) return !recorded && !now;
  return recorded->path == now->path && recorded->version == now->version && recorded->commit == now->commit &&
         !now->fingerprint.empty() && recorded->fingerprint == now->fingerprint;
}

// A record whose timings mean what this version's do, so that a resumed study does not report
// two meanings side by side: training records from kStepMeansSince on (before, a step was one
// rank's times), the others from kTimingsComparableSince.
bool timed_as_now(const PointRecord& record) {
  return record.schema_version >= (record.settings.kind == Kind::kTrain ? kStepMeansSince : kTimingsComparableSince);
}

}  // namespace

void SweepRunner::set_aside_unreadable(const std::vector<StoredRecord>& stored) {
  for (const auto& file : stored) {
    if (file.record) continue;
    const std::string aside = file.path + ".unreadable";
    std::error_code error;
    fs::rename(file.path, aside, error);
    out_ << fmt::format("harness: warning: {} is not a complete record ({}); its point runs again{}\n", file.path,
                        without_path(file.problem, file.path),
                        error ? "" : fmt::format(" (the file is kept as {})", aside));
  }
}

bool SweepRunner::keeps(const PointRecord& record) const {
  if (record.ok()) return true;
  // Ending the same way again is all an unchanged run of these would do.
  return options_.retry_failed &&
         (record.status == PointStatus::kTimeout || record.status == PointStatus::kOutOfMemory ||
          record.status == PointStatus::kCancelled);
}

std::multimap<PointKey, const StoredRecord*> SweepRunner::by_point_key(const std::vector<StoredRecord>& stored) {
  // Each key once: a resumed sweep of thousands of points looked every record's up per point.
  std::multimap<PointKey, const StoredRecord*> keyed;
  for (const auto& file : stored) {
    if (file.record) keyed.emplace(PointKey(file.record->settings, file.record->repeat), &file);
  }
  return keyed;
}

std::optional<PointStatus> SweepRunner::adopt_earlier_record(
    const Point& point, const std::multimap<PointKey, const StoredRecord*>& stored,
    const std::multimap<PointKey, const StoredRecord*>& aside) {
  const std::string own_path = directory_.record_path(point.id);
  // Only records of this harness version (and of the same build binary): another version may
  // measure differently.
  // A named build's record from before schema 14 ran with the running harness's defaults, not its
  // own (study/builds.h): measured again.
  const auto kept = [&](const StoredRecord& file) {
    const bool own_defaults = !file.record->build || !file.record->build->settings.empty();
    return keeps(*file.record) && timed_as_now(*file.record) && own_defaults &&
           file.record->provenance.harness_version == kHarnessVersion &&
           same_build(file.record->build, options_.rank_programs.provenance_for(point.settings));
  };
  const StoredRecord* found = nullptr;
  const auto [first, last] = stored.equal_range(point.key);
  for (auto it = first; it != last; ++it) {
    if (kept(*it->second) && (found == nullptr || it->second->path == own_path)) found = it->second;
  }
  // A record an earlier run set aside counts as if it were still in place (superseded_records.h).
  const bool set_aside = found == nullptr;
  if (set_aside) {
    const auto [aside_first, aside_last] = aside.equal_range(point.key);
    for (auto it = aside_first; it != aside_last; ++it) {
      if (kept(*it->second) && (found == nullptr || it->second->path == superseded_path(own_path))) {
        found = it->second;
      }
    }
  }
  if (found == nullptr) return std::nullopt;
  if (found->path == own_path) return found->record->status;
  PointRecord record = *found->record;
  const std::string old_id = record.id;
  try {
    if (found->path == superseded_path(own_path)) {
      rename_durably(found->path, own_path);
    } else {
      // The sweep changed and the point moved: its record and log follow it.
      record.id = point.id;
      record.index = point.index;
      write_file_atomically(own_path, to_json(record).dump(1));
      remove_if_present(found->path);
    }
  } catch (const Error&) {
    return std::nullopt;  // cannot take it: run the point again
  }
  if (set_aside) {
    take_back_files(directory_, found->path, point.id);
    forget_aside(point.key, found->path);
  } else {
    std::error_code ignored;
    fs::rename(directory_.log_path(old_id), directory_.log_path(point.id), ignored);
  }
  return record.status;
}

SweepRunner::Triage SweepRunner::triage_points(Submit submit, SweepOutcome& result) {
  Triage triage;
  triage.stored = read_stored_records(directory_);
  const std::vector<StoredRecord> superseded = read_superseded_records(directory_);
  superseded_.clear();
  for (const auto& [key, file] : by_point_key(superseded)) {
    superseded_.emplace(key, RecordAside{file->path, file->record->ok()});
  }
  // A job in flight is followed even when an earlier record of its point is still there: records
  // stay until their replacements are written.
  std::set<std::pair<std::string, std::string>> submitted;
  for (const auto& entry : read_ledger(directory_).entries) submitted.insert({entry.point_id, entry.key});
  const auto in_ledger = [&](const Point& point) { return submitted.count({point.id, point.key.hash()}) > 0; };
  if (submit == Submit::kAll) {
    set_aside_unreadable(triage.stored);
    const std::multimap<PointKey, const StoredRecord*> keyed = by_point_key(triage.stored);
    const std::multimap<PointKey, const StoredRecord*> aside = by_point_key(superseded);
    for (const auto& point : points_) {
      const auto status = options_.fresh || in_ledger(point) ? std::nullopt : adopt_earlier_record(point, keyed, aside);
      if (status) {
        triage.kept[&point] = *status;
        ++result.kept;
        if (*status != PointStatus::kOk) ++result.kept_not_ok[std::string(status_name(*status))];
        settled_.insert(point.id);  // measurements an interrupted run left of it
      } else {
        triage.without_record.push_back(&point);
      }
    }
  } else {
    for (const auto& point : points_) {
      std::error_code missing;
      if (in_ledger(point) || !fs::exists(directory_.record_path(point.id), missing)) {
        triage.without_record.push_back(&point);
      }
    }
  }
  return triage;
}

void SweepRunner::set_aside_records_of(const std::vector<const Point*>& to_run,
                                       const std::vector<StoredRecord>& stored) {
  // The records adopt_earlier_record moved or took back are of kept points, none of these.
  const std::multimap<PointKey, const StoredRecord*> keyed = by_point_key(stored);
  for (const Point* point : to_run) {
    const auto [first, last] = keyed.equal_range(point->key);
    for (auto it = first; it != last; ++it) set_aside(point->key, *it->second);
  }
}

void SweepRunner::set_aside(const PointKey& key, const StoredRecord& file) {
  try {
    const std::string aside = set_record_aside(directory_, file);
    if (aside.empty()) return;
    forget_aside(key, aside);  // replaced
    superseded_.emplace(key, RecordAside{aside, file.record->ok()});
  } catch (const Error& error) {
    out_ << fmt::format("harness: warning: {}; until a new record replaces it, reports take it for this run's\n",
                        error.what());
  }
}

void SweepRunner::forget_aside(const PointKey& key, const std::string& path) {
  const auto [first, last] = superseded_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    if (it->second.path == path) {
      superseded_.erase(it);
      return;
    }
  }
}

void SweepRunner::set_aside_own_record(const Point& point) {
  const std::string own_path = directory_.record_path(point.id);
  struct stat info {};
  if (::lstat(own_path.c_str(), &info) != 0) return;
  StoredRecord file;
  file.path = own_path;
  try {
    file.record = record_from_json(read_json_file(own_path), own_path);
  } catch (const Error& error) {
    file.problem = error.what();
  }
  if (!file.record) {
    set_aside_unreadable({file});
  } else if (PointKey(file.record->settings, file.record->repeat) == point.key) {
    set_aside(point.key, file);
  }
}

void SweepRunner::remove_superseded_of(const Point& point) {
  const auto [first, last] = superseded_.equal_range(point.key);
  for (auto it = first; it != last; ++it) remove_superseded(directory_, it->second.path);
  superseded_.erase(first, last);
}

int SweepRunner::points_waiting_aside(const Triage& triage) const {
  int waiting = 0;
  for (const auto& point : points_) {
    if (triage.kept.count(&point)) continue;
    const auto [first, last] = superseded_.equal_range(point.key);
    if (std::any_of(first, last, [](const auto& entry) { return entry.second.ok; })) ++waiting;
  }
  return waiting;
}

}  // namespace harness
