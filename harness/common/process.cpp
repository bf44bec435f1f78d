#include "harness/common/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/files.h"

extern char** environ;

namespace harness {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int /*signal*/) { g_interrupted = 1; }

// SIGPIPE's handler: nothing to do; the write that raised it fails with EPIPE instead.
void on_closed_output(int /*signal*/) {}

// The children this process is watching: their leftovers may be reaped, they may not.
std::set<pid_t>& live_children() {
  static std::set<pid_t> children;
  return children;
}

struct ProcessEntry {
  pid_t pid = 0;
  pid_t parent = 0;
  pid_t session = 0;
};

std::vector<ProcessEntry> all_processes() {
  std::vector<ProcessEntry> entries;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return entries;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(stat, line)) continue;
    // Fields after the parenthesised command name: state, ppid, pgrp, session, ...
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 1));
    std::string state;
    long parent = 0;
    long group = 0;
    long session = 0;
    fields >> state >> parent >> group >> session;
    entries.push_back({static_cast<pid_t>(pid), static_cast<pid_t>(parent), static_cast<pid_t>(session)});
  }
  ::closedir(proc);
  return entries;
}

// Kills whatever is left of the session `session` (the child's descendants), and every child of
// this process that no ChildProcess watches (an orphan that left its session), then reaps those
// that are, or became, this process's children.
void stop_leftovers(pid_t session) {
  const pid_t self = ::getpid();
  const auto is_leftover = [&](const ProcessEntry& entry) {
    return entry.pid != self && (entry.session == session ||
                                 (entry.parent == self && live_children().count(entry.pid) == 0));
  };
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    bool any = false;
    for (const auto& entry : all_processes()) {
      if (!is_leftover(entry)) continue;
      any = true;
      ::kill(entry.pid, SIGKILL);
      if (entry.parent == self) ::waitpid(entry.pid, nullptr, WNOHANG);
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Sends `signal` to the child's process group and waits up to `grace` for it to end.
bool signal_and_wait(pid_t pid, int signal, std::chrono::milliseconds grace, int& status) {
  ::kill(-pid, signal);
  ::kill(pid, signal);  // in case it has not made its session and group yet
  const auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// A descriptor that becomes readable when `pid` exits (a pidfd, Linux 5.3 and later), or -1.
int open_exit_fd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

}  // namespace

std::string ProcessOutcome::describe() const {
  if (interrupted) return "interrupted";
  if (timed_out) return fmt::format("timed out after the {:g} s limit", timeout_s);
  if (exited) return fmt::format("exit code {}", exit_code);
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  return "unknown status";
}

ChildProcess::ChildProcess(const ProcessRequest& request) : request_(request) {
  if (request_.argv.empty()) throw LaunchError("run_process: empty command");
  const std::string program = find_program(request_.argv[0]);
  if (program.empty()) {
    throw LaunchError(fmt::format("{}: program not found on PATH", request_.argv[0]));
  }
  int log_fd = -1;
  if (!request_.log_path.empty()) {
    // Not through a link: a results directory may have been prepared by someone else.
    log_fd = ::open(request_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      throw LaunchError(
          fmt::format("{}: cannot open log file: {}", request_.log_path, std::strerror(errno)));
    }
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> argv;
  for (const auto& arg : request_.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [key, value] : request_.environment) overridden |= name == key;
    for (const std::string_view removed : request_.removed_environment) {
      const bool prefix = !removed.empty() && removed.back() == '*';
      overridden |= prefix ? name.substr(0, removed.size() - 1) == removed.substr(0, removed.size() - 1)
                           : name == removed;
    }
    if (!overridden) env_storage.emplace_back(text);
  }
  for (const auto& [key, value] : request_.environment) env_storage.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_storage) envp.push_back(entry.data());
  envp.push_back(nullptr);

  // Orphaned grandchildren come back to us rather than to init (see stop_leftovers).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t parent = ::getpid();
  start_ = Clock::now();
  pid_ = ::fork();
  if (pid_ < 0) {
    if (log_fd >= 0) ::close(log_fd);
    throw LaunchError(fmt::format("fork failed: {}", std::strerror(errno)));
  }
  if (pid_ == 0) {
    ::setsid();  // a session (and process group) of its own: all it starts stays in it
    // If the harness dies (even by SIGKILL), mpirun is told to stop and takes its ranks down.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(126);
    if (!request_.working_directory.empty() && ::chdir(request_.working_directory.c_str()) != 0) {
      ::_exit(126);
    }
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    // mpirun must not read the harness's terminal.
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execve(program.c_str(), argv.data(), envp.data());
    const char message[] = "harness: exec failed\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof(message) - 1);
    ::_exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  live_children().insert(pid_);
  exit_fd_ = open_exit_fd(pid_);
}

ChildProcess::~ChildProcess() {
  if (!outcome_) stop();
  if (exit_fd_ >= 0) ::close(exit_fd_);
}

void ChildProcess::finish(int status, bool reaped) {
  live_children().erase(pid_);
  stop_leftovers(pid_);  // the session id is the child's pid (setsid)
  ProcessOutcome outcome;
  outcome.timeout_s = request_.timeout_s;
  outcome.wall_time_s = seconds_since(start_);
  outcome.interrupted = stop_requested_;
  if (reaped) {
    if (WIFEXITED(status)) {
      outcome.exited = true;
      outcome.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      outcome.signal = WTERMSIG(status);
    }
  }
  outcome_ = outcome;
}

void ChildProcess::stop() {
  if (outcome_) return;
  stop_requested_ = true;
  int status = 0;
  // SIGTERM lets mpirun take its ranks down; SIGKILL the group if it does not.
  const bool reaped = signal_and_wait(pid_, SIGTERM, std::chrono::seconds(5), status) ||
                      signal_and_wait(pid_, SIGKILL, std::chrono::seconds(5), status);
  finish(status, reaped);
}

std::optional<ProcessOutcome> ChildProcess::poll() {
  if (outcome_) return outcome_;
  int status = 0;
  const pid_t result = ::waitpid(pid_, &status, WNOHANG);
  if (result == pid_) {
    finish(status, true);
    return outcome_;
  }
  if (result < 0 && errno != EINTR) {
    finish(0, false);  // not our child any more: nothing to report but its end
    return outcome_;
  }
  const bool timed_out = request_.timeout_s > 0 && seconds_since(start_) > request_.timeout_s;
  if (timed_out || (request_.stop_on_interrupt && interrupt_requested())) {
    stop();
    outcome_->timed_out = timed_out;
    outcome_->interrupted = !timed_out;
    return outcome_;
  }
  return std::nullopt;
}

void wait_for_any(const std::vector<const ChildProcess*>& children, double timeout_s) {
  std::vector<pollfd> exits;
  for (const ChildProcess* child : children) {
    if (child->exit_fd() >= 0) exits.push_back({child->exit_fd(), POLLIN, 0});
  }
  const int timeout_ms = static_cast<int>(timeout_s * 1000);
  // Without pidfds, sleep briefly: the ranks run on every core, and a parent that woke every
  // 10 ms took 100 slices a second from one of them.
  if (exits.size() != children.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 10)));
    return;
  }
  ::poll(exits.data(), exits.size(), timeout_ms);  // EINTR (an interrupt) returns early too
}

ProcessOutcome run_process(const ProcessRequest& request) {
  ChildProcess child(request);
  while (true) {
    if (auto outcome = child.poll()) return *outcome;
    // A tenth of a second at most, so that timeouts and interrupts are seen.
    wait_for_any({&child}, 0.1);
  }
}

CapturedRun run_captured(ProcessRequest request, std::size_t max_bytes) {
  if (request.log_path.empty()) {
    const char* directory = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/harness-output-XXXXXX", directory != nullptr && *directory ? directory : "/tmp");
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw LaunchError(fmt::format("{}: cannot create a temporary file: {}", pattern, std::strerror(errno)));
    ::close(fd);
    request.log_path = pattern;
  }
  CapturedRun run;
  try {
    run.outcome = run_process(request);
  } catch (...) {
    ::unlink(request.log_path.c_str());
    throw;
  }
  std::ifstream in(request.log_path, std::ios::binary);
  char chunk[65536];
  while (run.output.size() < max_bytes &&
         in.read(chunk, static_cast<std::streamsize>(std::min(sizeof(chunk), max_bytes - run.output.size())))
             .gcount() > 0) {
    run.output.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  ::unlink(request.log_path.c_str());
  return run;
}

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // A dropped SSH session hangs up: stop like Ctrl-C (cancel what is in flight, keep the ledger)
  // rather than die between an sbatch and the ledger line that remembers its job. Unless the
  // caller ignores it: `nohup harness run ...` must outlive the session.
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  struct sigaction hang_up {};
  if (::sigaction(SIGHUP, nullptr, &hang_up) != 0 || hang_up.sa_handler != SIG_IGN) {
    ::sigaction(SIGHUP, &action, nullptr);
  }
}

bool interrupt_requested() { return g_interrupted != 0; }

void keep_running_when_output_closes() {
  struct sigaction current {};
  // A caller that ignores SIGPIPE has its programs ignore it too; leave that as it is.
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) return;
  struct sigaction action {};
  action.sa_handler = on_closed_output;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGPIPE, &action, nullptr);
}

bool standard_output_lost() {
  std::cout.flush();
  return !std::cout.good() || std::ferror(stdout) != 0;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string directories = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= directories.size()) {
    std::size_t end = directories.find(':', start);
    if (end == std::string::npos) end = directories.size();
    const std::string directory = directories.substr(start, end - start);
    const std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

namespace {
constexpr std::size_t kMaxLineBytes = 1000;
}  // namespace

namespace {

// Calls `take` with each line of the log at `path` (without its newline, cut at kMaxLineBytes)
// until it returns false. A log is never read through a link (open_plain_file).
template <typename Take>
void for_each_log_line(const std::string& path, Take take) {
  const PlainFile file = open_plain_file(path);
  if (!file) return;
  char* buffer = nullptr;
  std::size_t capacity = 0;
  ssize_t length = 0;
  while ((length = ::getline(&buffer, &capacity, file.get())) >= 0) {
    std::string line(buffer, static_cast<std::size_t>(length));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes) + "...";
    if (!take(std::move(line))) break;
  }
  std::free(buffer);
}

}  // namespace

std::vector<std::string> head_lines(const std::string& path, std::size_t lines) {
  std::vector<std::string> kept;
  if (lines == 0) return kept;
  for_each_log_line(path, [&](std::string line) {
    kept.push_back(std::move(line));
    return kept.size() < lines;
  });
  return kept;
}

std::vector<std::string> tail_lines(const std::string& path, std::size_t lines) {
  std::deque<std::string> kept;
  for_each_log_line(path, [&](std::string line) {
    kept.push_back(std::move(line));
    if (kept.size() > lines) kept.pop_front();
    return true;
  });
  return {kept.begin(), kept.end()};
}

}  // namespace harness
