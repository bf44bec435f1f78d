#include "harness/results/results_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/text.h"
#include "harness/results/record_damage.h"

namespace harness {
namespace fs = std::filesystem;

void ResultsDirectory::create() const {
  for (const auto& directory : {path_, points_dir(), logs_dir(), plots_dir()}) {
    std::error_code error;
    fs::create_directories(directory, error);
    if (error) {
      throw ConfigError(fmt::format("--out: cannot create directory {}: {}", directory, error.message()));
    }
    // A link here would send records and logs wherever its owner chose.
    if (directory != path_ && fs::is_symlink(directory, error)) {
      throw ConfigError(fmt::format("--out: {} is a symbolic link, expected a directory the harness creates; "
                                    "remove it",
                                    directory));
    }
    if (::access(directory.c_str(), W_OK) != 0) {
      throw ConfigError(fmt::format("--out: directory {} is not writable", directory));
    }
  }
}

void ResultsDirectory::require_own_experiment_copy() const {
  try {
    require_replaceable_file(experiment_copy(), "the experiment copy the harness writes (a link is never followed)");
  } catch (const Error& error) {
    throw ConfigError(error.what());
  }
}

void ResultsDirectory::check_creatable() const {
  // The nearest existing folder on the way up must be a writable directory for create() to work.
  fs::path existing = fs::absolute(path_).lexically_normal();
  std::error_code error;
  while (!fs::exists(fs::symlink_status(existing, error)) && existing.has_parent_path() &&
         existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  if (!fs::is_directory(existing, error)) {
    throw ConfigError(fmt::format("--out: cannot create directory {}: {} is not a directory", path_,
                                  existing.string()));
  }
  if (::access(existing.c_str(), W_OK) != 0) {
    throw ConfigError(fmt::format("--out: cannot create directory {}: {} is not writable", path_, existing.string()));
  }
}

bool ResultsDirectory::written_by_harness(const std::string& relative) {
  const fs::path path = fs::path(relative).lexically_normal();
  if (path.empty() || path.is_absolute() || *path.begin() == "..") return false;
  const std::string first = path.begin()->string();
  if (first == "points" || first == "logs" || first == "plots" || first == "jobs") return true;
  for (const char* name : {"experiment.json", "summary.csv", "stats.csv", "report.html", "model.json", "model.csv",
                           "prediction.json", "prediction.csv", ".lock"}) {
    if (path == name) return true;
  }
  return false;
}

std::vector<std::string> ResultsDirectory::measurements_files(const std::string& id) const {
  std::vector<std::string> files;
  const std::string prefix = id + ".";
  const std::string suffix = ".measurements.json";
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(logs_dir(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

void ResultsDirectory::check_reusable_for(const std::string& experiment_name) const {
  std::error_code error;
  if (!fs::is_directory(path_, error)) return;
  // What a run that stopped before it wrote experiment.json leaves (a full disk, a second run
  // started in the same instant): the lock and empty folders of its own. Nothing to lose there.
  const bool only_an_empty_skeleton = [&] {
    for (const auto& entry : fs::directory_iterator(path_, error)) {
      const std::string name = entry.path().filename().string();
      std::error_code ignored;
      const bool empty_folder_of_ours = (name == "points" || name == "logs" || name == "plots" || name == "jobs") &&
                                        !entry.is_symlink(ignored) && entry.is_directory(ignored) &&
                                        fs::is_empty(entry.path(), ignored);
      if (name != ".lock" && !empty_folder_of_ours) return false;
    }
    return true;
  }();
  if (only_an_empty_skeleton) return;
  if (!fs::exists(experiment_copy())) {
    throw ConfigError(fmt::format("--out {}: not empty and not a results directory (no "
                                  "experiment.json); choose a new or empty directory",
                                  path_));
  }
  std::string stored_name;
  try {
    stored_name = read_json_file(experiment_copy()).at("name").get<std::string>();
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("--out {}: its experiment.json is not an experiment file; "
                                  "choose a new or empty directory",
                                  path_));
  }
  if (stored_name != experiment_name) {
    throw ConfigError(fmt::format("--out {}: holds the results of experiment {}, not \"{}\"; "
                                  "choose a new or empty directory",
                                  path_, describe_text(stored_name), experiment_name));
  }
}

std::string lock_failure_message(const std::string& directory, int error, const std::string& holder) {
  if (error == EWOULDBLOCK) {
    return fmt::format("--out {}: in use by another harness run ({}); wait for it to finish or choose another "
                       "directory",
                       directory, holder.empty() ? "its process did not say which" : shortened(holder, 300));
  }
  if (error == ENOLCK || error == ENOSYS || error == EOPNOTSUPP || error == EINVAL) {
    return fmt::format("--out {}: its file system does not support file locks (flock: {}), so two runs could "
                       "write into it at once; choose a directory on a local file system",
                       directory, std::strerror(error));
  }
  return fmt::format("--out {}: cannot lock {}/.lock: {}", directory, directory, std::strerror(error));
}

DirectoryLock::DirectoryLock(const ResultsDirectory& directory,
                             const std::vector<std::string>& command_line) {
  const std::string path = directory.lock_file();
  // Never through a link (it would truncate the link's target) nor into a FIFO or device.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == ELOOP) {
    throw ConfigError(fmt::format("--out {}: {} is a symbolic link, expected the lock file the harness "
                                  "writes; remove it",
                                  directory.path(), path));
  }
  if (fd_ < 0) {
    const int error = errno;
    const std::string message =
        fmt::format("--out {}: cannot create its lock file: {}", directory.path(), std::strerror(error));
    if (error == EROFS || error == EACCES || error == EPERM) throw DirectoryNotWritable(message);
    throw ConfigError(message);
  }
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(fmt::format("--out {}: {} is not a regular file, expected the lock file the harness "
                                  "writes; remove it",
                                  directory.path(), path));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder(512, '\0');
    const ssize_t got = ::pread(fd_, holder.data(), holder.size(), 0);
    holder.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    if (const auto newline = holder.find('\n'); newline != std::string::npos) holder.resize(newline);
    ::close(fd_);
    fd_ = -1;
    const std::string message = lock_failure_message(directory.path(), error, holder);
    if (error == EWOULDBLOCK) throw DirectoryInUse(message, holder);
    throw ConfigError(message);
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::time_t now = std::time(nullptr);
  char since[32];
  std::strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string command;
  for (const auto& argument : command_line) command += (command.empty() ? "" : " ") + argument;
  const std::string holder = fmt::format("pid {} on {} since {}: {}\n", ::getpid(), host, since, command);
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, holder.data(), holder.size(), 0);
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::vector<StoredRecord> read_stored_records(const ResultsDirectory& directory) {
  std::vector<StoredRecord> stored;
  std::error_code error;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory.points_dir(), error)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    StoredRecord record;
    record.path = file.string();
    try {
      record.record = record_from_json(read_json_file(record.path), record.path);
      // A negative or non-finite time is no measurement: a failed repeat, never a table's value.
      mark_damaged_record(*record.record);
    } catch (const Error& bad) {
      record.problem = bad.what();
    }
    stored.push_back(std::move(record));
  }
  return stored;
}

std::string new_run_id() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  return fmt::format("{}-{}", stamp, ::getpid());
}

}  // namespace harness
