#include "harness/results/superseded_records.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "harness/common/errors.h"
#include "harness/common/files.h"

namespace harness {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".superseded";
constexpr std::string_view kRecordExtension = ".json";

// The point id a record's file is named after: "p001-ab" for points/p001-ab.json and
// points/p001-ab.json.superseded.
std::string id_of(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (name.ends_with(kSuffix)) name.resize(name.size() - kSuffix.size());
  if (name.ends_with(kRecordExtension)) name.resize(name.size() - kRecordExtension.size());
  return name;
}

// Whether `path` is a regular file (not a link to one).
bool regular_file(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// Moves `from` to `to`; with no `from`, removes `to`, which would otherwise pass for its partner.
// A log or trace that cannot be moved stays where it is: the record's move is what counts.
void move_or_clear(const std::string& from, const std::string& to) {
  if (!regular_file(from)) {
    remove_if_present(to);
    return;
  }
  try {
    rename_durably(from, to);
  } catch (const Error&) {
  }
}

// The point's log and trace, where its record's are.
std::vector<std::string> files_beside(const ResultsDirectory& directory, const std::string& id) {
  return {directory.log_path(id), directory.timeline_path(id)};
}

std::optional<PointRecord> readable_record(const std::string& path) {
  if (!regular_file(path)) return std::nullopt;
  try {
    return record_from_json(read_json_file(path), path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

std::string superseded_path(const std::string& record_path) { return record_path + std::string(kSuffix); }

std::vector<StoredRecord> read_superseded_records(const ResultsDirectory& directory) {
  std::vector<std::string> files;
  std::error_code error;
  for (fs::directory_iterator it(directory.points_dir(), error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(std::string(kRecordExtension) + std::string(kSuffix))) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<StoredRecord> stored;
  for (const std::string& path : files) {
    StoredRecord file;
    file.path = path;
    file.record = readable_record(path);
    if (file.record) stored.push_back(std::move(file));
  }
  return stored;
}

std::string set_record_aside(const ResultsDirectory& directory, const StoredRecord& file) {
  const std::string aside = superseded_path(file.path);
  const std::string id = id_of(file.path);
  const std::optional<PointRecord> waiting = readable_record(aside);
  if (waiting && waiting->ok() && !(file.record && file.record->ok())) {
    // The ok record waiting aside is the one a later run may take back.
    remove_if_present(file.path);
    for (const std::string& beside : files_beside(directory, id)) remove_if_present(beside);
    return "";
  }
  rename_durably(file.path, aside);
  for (const std::string& beside : files_beside(directory, id)) move_or_clear(beside, superseded_path(beside));
  return aside;
}

void take_back_files(const ResultsDirectory& directory, const std::string& superseded, const std::string& id) {
  const std::vector<std::string> own = files_beside(directory, id);
  const std::vector<std::string> aside = files_beside(directory, id_of(superseded));
  for (std::size_t i = 0; i < own.size(); ++i) move_or_clear(superseded_path(aside[i]), own[i]);
}

void remove_superseded(const ResultsDirectory& directory, const std::string& superseded) {
  remove_if_present(superseded);
  for (const std::string& beside : files_beside(directory, id_of(superseded))) {
    remove_if_present(superseded_path(beside));
  }
}

}  // namespace harness
