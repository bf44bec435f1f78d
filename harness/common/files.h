// Files: written atomically (a reader never sees half of one), and read from users with bounds.
// A user may name anything as an experiment or data file; a directory, a FIFO nobody writes to,
// a device such as /dev/zero, a binary file or one with an endless line gets a one-line
// ConfigError at once instead of a hang, a full memory or raw bytes echoed to the terminal.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "harness/common/bounded_json.h"
#include "harness/common/json.h"

namespace harness {

// What a file is expected to be, for the bounds and the messages.
struct ExpectedFile {
  std::string_view noun;          // "experiment file": "<path>: cannot open experiment file"
  std::string_view with_article;  // "an experiment file (JSON)": "is a directory, expected ..."
  std::size_t max_bytes = 0;
  std::size_t max_line_bytes = 0;  // 0: lines may be as long as the file
};

// A file the harness reads back from a directory others may write in (a point's log, a job's
// status file): opened without following a link, and only when it is a regular file; null
// otherwise (missing, a link, a FIFO, ...). Whoever plants a link there must not have the harness
// read, and quote, its target.
using PlainFile = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;
PlainFile open_plain_file(const std::string& path);

// The whole file as text. FIFOs are read while a writer is attached (so `harness run <(jq ...)`
// works) and for at most a few seconds; NUL bytes mean binary data. Throws ConfigError
// "<path>: ..." naming what was found and what was expected.
std::string read_text_file(const std::string& path, const ExpectedFile& expected);

// Throws ConfigError "<path>: is a FIFO (named pipe), expected <with_article>" (likewise a
// directory, a device, a socket) unless `path` is a regular file or a link to one; a missing file
// passes (opening it says so).
void require_regular_file(const std::string& path, std::string_view with_article);

// Writes `content` to `path` durably, the way databases do: a new temporary file beside it
// (created exclusively, so no link planted under its name is followed), written in full, fsync'd
// and closed (both checked), renamed over `path`, then the directory fsync'd. Until the rename
// `path` keeps its old content; after it returns the new content survives a crash. Refuses a
// `path` that is a symbolic link or anything but a regular file (someone else may have prepared
// the directory). Throws Error "<path>: ..." naming what went wrong.
// Removes the file at `path` if there is one; a file already gone or not removable is left as is.
void remove_if_present(const std::string& path);

// kReplaceable skips the two fsyncs, for a file that a later write replaces anyway (a rank's
// measurements so far while its loop runs): still never half written, not necessarily on disk.
enum class Durability { kDurable, kReplaceable };
void write_file_atomically(const std::string& path, const std::string& content,
                           Durability durability = Durability::kDurable);

// Throws Error "<path>: is a symbolic link, expected <with_article>" (likewise a directory, a
// FIFO, a device) unless `path` is missing or a regular file; a link is never followed.
void require_replaceable_file(const std::string& path, std::string_view with_article);

// Makes a file this process wrote under `temporary` durable as `path`: fsync, rename over `path`
// (which require_replaceable_file must accept), fsync the directory. Throws Error naming `path`.
void replace_file(const std::string& temporary, const std::string& path);

// Renames a file the harness wrote (`from`, kept as it is) to `to` in the same file system, then
// fsyncs the directory, so that the new name survives a crash; `to` must be missing or a regular
// file (require_replaceable_file). Needs no free space. Throws Error naming `from` when it cannot.
void rename_durably(const std::string& from, const std::string& to);

// A JSON file the harness wrote (a record, a rank's measurements, the job ledger), read within
// the bounds of bounded_json.h: a file over `max_bytes` is refused before it is read. Never
// through a symbolic link (the harness writes none; one planted in its place is refused, and no
// byte of its target is read). Throws Error "<path>: ..." in one line naming the bound, what was
// found instead of a regular file, or the syntax error.
Json read_json_file(const std::string& path, std::size_t max_bytes = kMaxRecordBytes);

}  // namespace harness
