#include "harness/common/files.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "harness/common/bounded_json.h"
#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/text.h"

namespace harness {
namespace {

// How long a FIFO may keep the reader waiting for its next bytes.
constexpr double kFifoPatienceS = 5;

std::string_view file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// "64 MiB" for whole mebibytes from one up, "1000 bytes" otherwise.
std::string size_text(std::size_t bytes) {
  constexpr std::size_t kMebibyte = std::size_t{1} << 20;
  return bytes >= kMebibyte && bytes % kMebibyte == 0 ? fmt::format("{} MiB", bytes / kMebibyte)
                                                      : fmt::format("{} bytes", bytes);
}

// Closes the descriptor however the read ends.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// The rename of a file is durable once its directory is: fsync the directory. Called after the rename: the file is in place whatever happens here, so a failure is a warning
// (on stderr, once), never an error that would call a written file unwritten. Some file systems
// cannot fsync a directory (EINVAL, ENOTSUP, ENOSYS) or open one for reading (EACCES).
void sync_directory_of(const std::string& path) {
  const std::string directory = std::filesystem::path(path).parent_path().string();
  Descriptor handle{::open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  const bool synced = handle.fd >= 0 && ::fsync(handle.fd) == 0;
  const int error = errno;
  if (synced || error == EINVAL || error == EROFS || error == ENOTSUP || error == ENOSYS || error == EACCES) return;
  static bool warned = false;
  if (!warned) {
    warned = true;
    std::cerr << fmt::format("harness: warning: {}: written, but its directory could not be flushed to disk: {}\n",
                             path, std::strerror(error));
  }
}

// What a new file's permissions would be through open(..., 0666): mkostemp creates 0600.
mode_t new_file_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(022);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

}  // namespace

void require_regular_file(const std::string& path, std::string_view with_article) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return;
  throw ConfigError(fmt::format("{}: is {}, expected {}", path, file_type_name(info.st_mode), with_article));
}

std::string read_text_file(const std::string& path, const ExpectedFile& expected) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (S_ISDIR(info.st_mode) || S_ISSOCK(info.st_mode) ||
                                           S_ISBLK(info.st_mode))) {
    throw ConfigError(
        fmt::format("{}: is {}, expected {}", path, file_type_name(info.st_mode), expected.with_article));
  }
  const bool fifo = ::stat(path.c_str(), &info) == 0 && S_ISFIFO(info.st_mode);
  // Non-blocking: opening a FIFO for reading would otherwise wait for a writer forever.
  Descriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) throw ConfigError(fmt::format("{}: cannot open {}", path, expected.noun));

  std::string text;
  std::size_t line_start = 0;
  char buffer[64 * 1024];
  auto last_data = Clock::now();
  while (true) {
    const ssize_t got = ::read(file.fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) {  // a FIFO whose writer has not written yet
      if (seconds_since(last_data) > kFifoPatienceS) {
        throw ConfigError(fmt::format("{}: is a FIFO (named pipe) that sent nothing for {:g} s, "
                                      "expected {}",
                                      path, kFifoPatienceS, expected.with_article));
      }
      pollfd readable{file.fd, POLLIN, 0};
      ::poll(&readable, 1, 100);
      continue;
    }
    if (got < 0) {
      throw ConfigError(fmt::format("{}: cannot read {}: {}", path, expected.noun, std::strerror(errno)));
    }
    if (got == 0) break;
    last_data = Clock::now();
    const std::size_t old_size = text.size();
    if (old_size + static_cast<std::size_t>(got) > expected.max_bytes) {
      throw ConfigError(fmt::format("{}: expected {} of at most {}, got more", path,
                                    expected.with_article, size_text(expected.max_bytes)));
    }
    text.append(buffer, static_cast<std::size_t>(got));
    for (std::size_t i = old_size; i < text.size(); ++i) {
      if (text[i] == '\0') {
        throw ConfigError(fmt::format("{}: holds binary data (a NUL byte at offset {}), expected {}",
                                      path, i, expected.with_article));
      }
      if (text[i] == '\n') {
        line_start = i + 1;
        continue;
      }
      if (expected.max_line_bytes > 0 && i - line_start >= expected.max_line_bytes) {
        const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n');
        throw ConfigError(fmt::format("{}: line {} is longer than {} bytes, expected {}", path, line,
                                      expected.max_line_bytes, expected.with_article));
      }
    }
  }
  if (fifo && text.empty()) {
    throw ConfigError(fmt::format("{}: is a FIFO (named pipe) with nothing to read, expected {}",
                                  path, expected.with_article));
  }
  return text;
}

void require_replaceable_file(const std::string& path, std::string_view with_article) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return;
  throw Error(fmt::format("{}: is {}, expected {}", path,
                          S_ISLNK(info.st_mode) ? "a symbolic link" : file_type_name(info.st_mode), with_article));
}

void replace_file(const std::string& temporary, const std::string& path) {
  const auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw Error(fmt::format("{}: {}: {}", path, what, reason));
  };
  {
    Descriptor file{::open(temporary.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
    if (file.fd < 0) fail("cannot open its temporary " + temporary);
    if (::fsync(file.fd) != 0) fail("cannot flush it to disk");
  }
  try {
    require_replaceable_file(path, "a file the harness writes");
  } catch (const Error&) {
    ::unlink(temporary.c_str());
    throw;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot rename into place");
  sync_directory_of(path);
}

void remove_if_present(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

void write_file_atomically(const std::string& path, const std::string& content, Durability durability) {
  require_replaceable_file(path, "a file the harness writes");
  std::string temporary = path + ".tmp.XXXXXX";
  // mkostemp creates it with O_EXCL: a link planted under the name is an error, not followed.
  Descriptor file{::mkostemp(temporary.data(), O_CLOEXEC)};
  if (file.fd < 0) {
    throw Error(fmt::format("{}: cannot create a temporary file beside it: {}", path, std::strerror(errno)));
  }
  const auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw Error(fmt::format("{}: {}: {}", path, what, reason));
  };
  if (::fchmod(file.fd, new_file_mode()) != 0) fail("cannot set its permissions");
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t wrote = ::write(file.fd, content.data() + written, content.size() - written);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) fail("cannot write");
    written += static_cast<std::size_t>(wrote);
  }
  // A file renamed into place before its data reaches the disk can be empty after a crash.
  const bool durable = durability == Durability::kDurable;
  if (durable && ::fsync(file.fd) != 0) fail("cannot flush it to disk");
  const int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) fail("cannot close");
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot rename into place");
  if (durable) sync_directory_of(path);
}

void rename_durably(const std::string& from, const std::string& to) {
  require_replaceable_file(to, "a file the harness writes");
  if (::rename(from.c_str(), to.c_str()) != 0) {
    throw Error(fmt::format("{}: cannot rename it to {}: {}", from, to, std::strerror(errno)));
  }
  sync_directory_of(to);
}

PlainFile open_plain_file(const std::string& path) {
  PlainFile none(nullptr, &std::fclose);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return none;
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return none;
  }
  std::FILE* file = ::fdopen(fd, "r");
  if (file == nullptr) {
    ::close(fd);
    return none;
  }
  return PlainFile(file, &std::fclose);
}

Json read_json_file(const std::string& path, std::size_t max_bytes) {
  // O_NOFOLLOW: a link planted in a results directory would have the harness read its target, and
  // a syntax error quote its first bytes. O_NONBLOCK: opening a FIFO must not wait for a writer.
  Descriptor file{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0 && errno == ELOOP) {
    throw Error(
        fmt::format("{}: is a symbolic link, expected a JSON file the harness writes (a link is never "
                    "followed)",
                    path));
  }
  if (file.fd < 0) throw Error(fmt::format("{}: cannot open", path));
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) throw Error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  if (!S_ISREG(info.st_mode)) {
    throw Error(fmt::format("{}: is {}, expected a JSON file", path, file_type_name(info.st_mode)));
  }
  // Refused before a byte is read: reading is what would take the memory.
  const auto too_large = [&] {
    return Error(fmt::format("{}: expected a JSON file of at most {}, got {} bytes", path, size_text(max_bytes),
                             info.st_size));
  };
  if (static_cast<std::size_t>(info.st_size) > max_bytes) throw too_large();
  std::string text;
  text.reserve(static_cast<std::size_t>(info.st_size));
  char buffer[64 * 1024];
  while (true) {
    const ssize_t got = ::read(file.fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (got == 0) break;
    // The file may have grown since stat.
    if (text.size() + static_cast<std::size_t>(got) > max_bytes) {
      ::fstat(file.fd, &info);
      throw too_large();
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return parse_bounded_json(text, path);
}

}  // namespace harness
