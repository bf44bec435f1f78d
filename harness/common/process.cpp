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

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/common/errors.h"

extern char** environ;

namespace harness {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int /*signal*/) { g_interrupted = 1; }

using Clock = std::chrono::steady_clock;

// Sends `signal` to the child's process group, then waits up to `grace` for it to end.
bool stop_group(pid_t pid, int signal, std::chrono::milliseconds grace, int& status) {
  ::kill(-pid, signal);
  const auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Kills and reaps every remaining child of this process: the orphans (ranks) that the subreaper
// setting re-parented to us after their mpirun ended.
void kill_orphans() {
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(stat, line)) continue;
    // Fields after the parenthesised command name: state, ppid, ...
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 1));
    std::string state;
    long parent = 0;
    fields >> state >> parent;
    if (parent == self) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
  ::closedir(proc);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    const pid_t reaped = ::waitpid(-1, &status, WNOHANG);
    if (reaped < 0) break;  // no children left
    if (reaped == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// A descriptor that becomes readable when `pid` exits (a pidfd, Linux 5.3 and later), or -1.
int open_exit_fd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

// Sleeps until the child exits or a tenth of a second has passed, so that the caller still sees
// timeouts and interrupts (SIGINT may be delivered to another thread). The ranks run on every
// core: a parent that woke every 10 ms took 100 slices a second from one of them. Without a
// pidfd, it does just that.
void wait_for_exit(int exit_fd) {
  if (exit_fd >= 0) {
    pollfd exited{exit_fd, POLLIN, 0};
    ::poll(&exited, 1, 100);  // EINTR (an interrupt) returns early too
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::string ProcessOutcome::describe() const {
  if (interrupted) return "interrupted";
  if (timed_out) return fmt::format("timed out after the {:g} s limit", timeout_s);
  if (exited) return fmt::format("exit code {}", exit_code);
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  return "unknown status";
}

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

bool interrupt_requested() { return g_interrupted != 0; }

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

ProcessOutcome run_process(const ProcessRequest& request) {
  if (request.argv.empty()) throw LaunchError("run_process: empty command");
  const std::string program = find_program(request.argv[0]);
  if (program.empty()) {
    throw LaunchError(fmt::format("{}: program not found on PATH", request.argv[0]));
  }

  int log_fd = -1;
  if (!request.log_path.empty()) {
    log_fd = ::open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      throw LaunchError(
          fmt::format("{}: cannot open log file: {}", request.log_path, std::strerror(errno)));
    }
  }

  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> argv;
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    bool overridden = false;
    for (const auto& [key, value] : request.environment) {
      if (text.size() > key.size() && text.substr(0, key.size()) == key && text[key.size()] == '=') {
        overridden = true;
      }
    }
    if (!overridden) env_storage.emplace_back(text);
  }
  for (const auto& [key, value] : request.environment) env_storage.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : env_storage) envp.push_back(entry.data());
  envp.push_back(nullptr);

  // Orphaned grandchildren come back to us rather than to init (see kill_orphans).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t parent = ::getpid();
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (log_fd >= 0) ::close(log_fd);
    throw LaunchError(fmt::format("fork failed: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    // If the harness dies (even by SIGKILL), mpirun is told to stop and takes its ranks down.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(126);
    if (!request.working_directory.empty() && ::chdir(request.working_directory.c_str()) != 0) {
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
  ::setpgid(pid, pid);  // also in the parent, so the group exists before we might signal it
  if (log_fd >= 0) ::close(log_fd);

  const int exit_fd = open_exit_fd(pid);
  ProcessOutcome outcome;
  int status = 0;
  bool reaped = false;
  while (!reaped) {
    const pid_t result = ::waitpid(pid, &status, WNOHANG);
    if (result == pid) {
      reaped = true;
      break;
    }
    if (result < 0 && errno != EINTR) break;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const bool timed_out = request.timeout_s > 0 && elapsed > request.timeout_s;
    if (timed_out || (request.stop_on_interrupt && interrupt_requested())) {
      outcome.timed_out = timed_out;
      outcome.interrupted = !timed_out;
      // SIGTERM lets mpirun take its ranks down; SIGKILL the group if it does not.
      reaped = stop_group(pid, SIGTERM, std::chrono::seconds(5), status) ||
               stop_group(pid, SIGKILL, std::chrono::seconds(5), status);
      break;
    }
    wait_for_exit(exit_fd);
  }
  if (exit_fd >= 0) ::close(exit_fd);
  // Whatever the child left behind (in its group, or ranks in groups of their own) goes too.
  ::kill(-pid, SIGKILL);
  kill_orphans();
  outcome.timeout_s = request.timeout_s;
  outcome.wall_time_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (reaped) {
    if (WIFEXITED(status)) {
      outcome.exited = true;
      outcome.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      outcome.signal = WTERMSIG(status);
    }
  }
  return outcome;
}

std::vector<std::string> tail_lines(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> kept;
  std::string line;
  while (std::getline(in, line)) {
    kept.push_back(line);
    if (kept.size() > lines) kept.pop_front();
  }
  return {kept.begin(), kept.end()};
}

}  // namespace harness
