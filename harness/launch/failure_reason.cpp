#include "harness/launch/failure_reason.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <system_error>

#include <fmt/format.h>

#include "harness/common/files.h"

namespace harness {

namespace {

constexpr std::size_t kMaxMessageChars = 300;

bool is_rule(const std::string& line) {
  return line.size() >= 20 && line.find_first_not_of('-') == std::string::npos;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The lines joined by single spaces, cut to kMaxMessageChars.
std::string one_line(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) {
    const std::string part = trimmed(line);
    if (!part.empty()) text += (text.empty() ? "" : " ") + part;
  }
  if (text.size() > kMaxMessageChars) text = text.substr(0, kMaxMessageChars - 3) + "...";
  return text;
}

// Open MPI help messages that say only that a rank failed: the rank's own line says more.
bool about_a_rank(const std::string& text) {
  for (const char* start : {"Primary job terminated normally", "mpirun noticed that process rank",
                            "mpirun detected that one or more processes exited", "prterun detected"}) {
    if (text.rfind(start, 0) == 0) return true;
  }
  return false;
}

// Open MPI could not start its daemon on some host (ssh found no such host, no answer, no key),
// so no rank started: "" otherwise. What the remote shell said is above Open MPI's message, outside
// any other help message.
std::string daemons_not_started(const std::vector<std::string>& log) {
  static const std::regex daemons(R"((ORTE|PRTE|PRRTE) was unable to reliably start one or more daemons)");
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (!std::regex_search(log[i], daemons)) continue;
    std::vector<std::string> said;
    bool inside_help = false;
    for (std::size_t j = 0; j + 1 < i; ++j) {  // log[i - 1] opens the message
      if (is_rule(log[j])) {
        inside_help = !inside_help;
      } else if (!inside_help && !trimmed(log[j]).empty()) {
        said.push_back(log[j]);
      }
    }
    if (said.size() > 3) said.erase(said.begin(), said.end() - 3);
    return "no rank started: mpirun could not start its daemon on every host" +
           (said.empty() ? std::string() : " (the remote shell said: " + one_line(said) + ")");
  }
  return "";
}

}  // namespace

std::string launcher_message(const std::vector<std::string>& log) {
  // srun's and sbatch's "error:", and mpirun's own one-line refusals outside a help message
  // ("mpirun: Error: unknown option \"--bogus\"").
  static const std::regex scheduler_error(R"((srun|sbatch|salloc|mpirun|mpiexec|prterun): [Ee]rror: (.*))");
  static const std::regex task_line(R"(srun: error: \S+: tasks? [0-9,\-]+: )");
  for (std::size_t i = 0; i < log.size(); ++i) {
    std::smatch match;
    if (std::regex_search(log[i], match, scheduler_error) && !std::regex_search(log[i], task_line)) {
      return one_line({match[1].str() + ": " + match[2].str()});
    }
    if (!is_rule(log[i])) continue;
    // A help message: paragraphs up to the closing rule.
    std::vector<std::vector<std::string>> paragraphs(1);
    std::size_t end = i + 1;
    for (; end < log.size() && !is_rule(log[end]); ++end) {
      if (trimmed(log[end]).empty()) {
        if (!paragraphs.back().empty()) paragraphs.emplace_back();
      } else {
        paragraphs.back().push_back(log[end]);
      }
    }
    if (paragraphs.back().empty()) paragraphs.pop_back();
    if (!paragraphs.empty()) {
      std::vector<std::string> said = paragraphs[0];
      if (trimmed(said.back()).back() == ':' && paragraphs.size() > 1) {
        said.insert(said.end(), paragraphs[1].begin(), paragraphs[1].end());
      }
      const std::string text = one_line(said);
      if (!about_a_rank(text)) return text;
    }
    i = end;  // past the closing rule
  }
  return "";
}

namespace {

// The rank program's last words: "harness worker (rank 0): <message>".
const std::regex& rank_error_pattern() {
  static const std::regex pattern(R"(harness worker \(rank (\d+)\): (.*))");
  return pattern;
}

// A rank's crash report (crash_report.h), which it writes before the signal ends it.
bool is_crash_report(const std::string& message) {
  for (const char* signal : {"SIGSEGV ", "SIGBUS ", "SIGILL ", "SIGFPE ", "a fatal signal "}) {
    if (message.rfind(signal, 0) == 0) return true;
  }
  return false;
}

// The signal with which mpirun stops the other ranks once one has failed.
constexpr int kStoppingSignal = 15;  // SIGTERM

// srun's words for a task that a signal ended ("Killed", "Segmentation fault"), other than the
// one with which it stops the others ("Terminated"); not its "Exited with exit code 3".
bool srun_names_a_signal(const std::string& words) {
  return words != "Terminated" && words.rfind("Exited with exit code", 0) != 0;
}

}  // namespace

std::vector<std::string> rank_error_lines(const std::string& log_path) {
  constexpr std::size_t kMaxLines = 64;
  constexpr std::size_t kMaxLineBytes = 1000;
  std::vector<std::string> found;
  const PlainFile log = open_plain_file(log_path);  // never read through a link
  if (!log) return found;
  char* buffer = nullptr;
  std::size_t capacity = 0;
  ssize_t length = 0;
  while (found.size() < kMaxLines && (length = ::getline(&buffer, &capacity, log.get())) >= 0) {
    std::string line(buffer, static_cast<std::size_t>(length));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line.find("harness worker (rank ") == std::string::npos) continue;
    if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes) + "...";
    if (std::regex_search(line, rank_error_pattern())) found.push_back(std::move(line));
  }
  std::free(buffer);
  return found;
}

std::string launcher_name(const std::vector<std::string>& command) {
  // The local launcher's srun inside an allocation is started through `env NAME=VALUE ... srun`.
  std::size_t at = 0;
  if (at < command.size() && std::filesystem::path(command[at]).filename() == "env") {
    for (++at; at < command.size() && command[at].find('=') != std::string::npos; ++at) {
    }
  }
  if (at >= command.size()) return "job";
  return std::filesystem::path(command[at]).filename().string();
}

std::string job_failure_reason(const ProcessOutcome& outcome, const std::vector<std::string>& log_tail,
                               const std::string& launcher, const std::vector<std::string>& log_head,
                               const std::vector<std::string>& rank_errors) {
  if (outcome.timed_out || outcome.interrupted) return outcome.describe();
  // Which rank failed first. Once one has, the others fail after it, and may say so in errors of
  // their own (gloo's "Connection closed by peer", MPI's errors) further down the log, before or
  // after mpirun's line on how the job ended:
  //   1. a crash report: a rank that crashed was not stopped by another's failure;
  //   2. a rank that died of a signal other than the SIGTERM that stops the others (mpirun's
  //      "process rank 1 ... exited on signal 9", srun's "task 1: Killed"): killed from outside
  //      (the OOM killer), or aborting, its peers' errors come after; in its own words where it
  //      left any (a library's error before its abort());
  //   3. the first error a rank program wrote, in the log's order;
  //   4. a rank that mpirun or srun stopped.
  // The log's rank lines in order: all of them when the caller read them (rank_error_lines), else
  // those of its head and tail (a crash report's backtrace and mpirun's lines may push it out of
  // the tail).
  std::vector<std::string> ordered = rank_errors;
  if (ordered.empty()) {
    ordered = log_head;
    ordered.insert(ordered.end(), log_tail.begin(), log_tail.end());
  }
  std::optional<std::string> first_error;
  std::map<std::string, std::string> first_words;  // rank -> its first line
  for (const auto& line : ordered) {
    std::smatch match;
    if (!std::regex_search(line, match, rank_error_pattern())) continue;
    const std::string said = fmt::format("rank {}: {}", match[1].str(), match[2].str());
    if (is_crash_report(match[2].str())) return said;
    if (!first_error) first_error = said;
    first_words.emplace(match[1].str(), said);
  }
  const auto in_own_words = [&](const std::string& rank, const std::string& otherwise) {
    const auto found = first_words.find(rank);
    return found != first_words.end() ? found->second : otherwise;
  };
  // Open MPI 4: "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9
  // (Killed)."
  static const std::regex rank_signal(
      R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)( \([^)]*\))?)");
  std::optional<std::string> stopped;
  for (const auto& line : log_tail) {
    std::smatch match;
    if (std::regex_search(line, match, rank_signal)) {
      const std::string said =
          fmt::format("rank {} killed by signal {}{}", match[1].str(), match[2].str(), match[3].str());
      if (std::stoi(match[2].str()) != kStoppingSignal) return in_own_words(match[1].str(), said);
      if (!stopped) stopped = said;
    }
  }
  // srun: "srun: error: hnode2: task 1: Killed", "...: tasks 0-1: Exited with exit code 3". The
  // first such line is the cause; srun then terminates the others ("Terminated").
  static const std::regex srun_task(R"(srun: error: (\S+): tasks? ([0-9,\-]+): (.*))");
  std::optional<std::string> srun_said;
  for (const auto& line : log_tail) {
    std::smatch match;
    if (std::regex_search(line, match, srun_task)) {
      const std::string said = fmt::format("rank {} on {}: {}", match[2].str(), match[1].str(), match[3].str());
      if (srun_names_a_signal(match[3].str())) return in_own_words(match[2].str(), said);
      if (!srun_said) srun_said = said;
    }
  }
  if (first_error) return *first_error;
  if (stopped) return *stopped;
  if (srun_said) return *srun_said;
  std::string said = daemons_not_started(log_head);
  if (said.empty()) said = daemons_not_started(log_tail);
  if (said.empty()) said = launcher_message(log_head);
  if (said.empty()) said = launcher_message(log_tail);
  return launcher + " " + outcome.describe() + (said.empty() ? "" : ": " + said);
}

std::string full_disk_remark(const std::string& directory, std::uintmax_t available_bytes) {
  // Below a page or two a write of any log or record fails; 1 MiB leaves room for neither a
  // training point's measurements nor its log, and is too little to be a coincidence beside a failure.
  constexpr std::uintmax_t kNearlyFullBytes = 1024 * 1024;
  if (available_bytes >= kNearlyFullBytes) return "";
  return fmt::format("; the file system of {} has {} KiB free: what the job wrote there may be cut short",
                     directory, available_bytes / 1024);
}

std::string full_disk_remark(const std::string& directory) {
  std::error_code error;
  const std::filesystem::space_info space = std::filesystem::space(directory, error);
  return error ? "" : full_disk_remark(directory, space.available);
}

}  // namespace harness
