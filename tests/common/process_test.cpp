#include "harness/common/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness/common/errors.h"

namespace harness {
namespace {

std::string temp_log(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("harness_process_test_" + name);
  std::filesystem::remove(path);
  return path.string();
}

TEST(Process, ExitCodeAndOutputGoToTheLog) {
  ProcessRequest request;
  request.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  request.log_path = temp_log("exit");
  const ProcessOutcome outcome = run_process(request);
  EXPECT_TRUE(outcome.exited);
  EXPECT_EQ(outcome.exit_code, 3);
  EXPECT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.describe(), "exit code 3");
  EXPECT_EQ(tail_lines(request.log_path, 10), (std::vector<std::string>{"out", "err"}));
}

TEST(Process, EnvironmentAndWorkingDirectoryReachTheChild) {
  ProcessRequest request;
  request.argv = {"sh", "-c", "echo \"$HARNESS_TEST_VALUE $(pwd)\""};
  request.environment = {{"HARNESS_TEST_VALUE", "forty-two"}};
  request.working_directory = std::string(1, '/');  // not = "/": GCC 12 false -Wrestrict (bug 105329)
  request.log_path = temp_log("env");
  ASSERT_TRUE(run_process(request).ok());
  EXPECT_EQ(tail_lines(request.log_path, 1), (std::vector<std::string>{"forty-two /"}));
}

// The pid the child printed on the first line of its log.
pid_t first_line_pid(const std::string& log_path) {
  const auto lines = tail_lines(log_path, 100);
  return lines.empty() ? 0 : static_cast<pid_t>(std::stol(lines.front()));
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

TEST(Process, TimeoutStopsTheChildAndWhatItStarted) {
  ProcessRequest request;
  // The grandchild sits in a session and process group of its own, as Open MPI's ranks do, so
  // signalling the child's group does not reach it.
  request.argv = {"sh", "-c", "setsid sleep 60 & echo $!; wait"};
  request.log_path = temp_log("timeout");
  request.timeout_s = 0.5;
  const ProcessOutcome outcome = run_process(request);
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_FALSE(outcome.ok());
  EXPECT_LT(outcome.wall_time_s, 10.0);
  EXPECT_EQ(outcome.describe(), "timed out after the 0.5 s limit");
  const pid_t grandchild = first_line_pid(request.log_path);
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(process_exists(grandchild)) << "sleep " << grandchild << " outlived the timeout";
}

TEST(Process, LeftoversOfAChildThatExitedAreStopped) {
  ProcessRequest request;
  request.argv = {"sh", "-c", "setsid sleep 60 & echo $!"};  // exits at once, leaving sleep
  request.log_path = temp_log("leftover");
  EXPECT_TRUE(run_process(request).ok());
  const pid_t grandchild = first_line_pid(request.log_path);
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(process_exists(grandchild)) << "sleep " << grandchild << " was left running";
}

// The ranks use every core, so the harness must not keep waking up to see whether mpirun ended:
// polling every 10 ms took 100 time slices a second from a rank.
TEST(Process, TheHarnessSleepsWhileTheChildRuns) {
  ProcessRequest request;
  request.argv = {"sleep", "1"};
  request.log_path = temp_log("sleeps");
  rusage before{};
  ASSERT_EQ(::getrusage(RUSAGE_THREAD, &before), 0);
  ASSERT_TRUE(run_process(request).ok());
  rusage after{};
  ASSERT_EQ(::getrusage(RUSAGE_THREAD, &after), 0);
  // About 10 (a tenth of a second at most between checks for timeouts and interrupts).
  EXPECT_LT(after.ru_nvcsw - before.ru_nvcsw, 40);
}

TEST(Process, SignalIsReported) {
  ProcessRequest request;
  request.argv = {"sh", "-c", "kill -9 $$"};
  const ProcessOutcome outcome = run_process(request);
  EXPECT_FALSE(outcome.exited);
  EXPECT_EQ(outcome.signal, SIGKILL);
  EXPECT_NE(outcome.describe().find("killed by signal 9"), std::string::npos);
}

TEST(Process, MissingProgramThrowsLaunchError) {
  ProcessRequest request;
  request.argv = {"harness-no-such-program"};
  EXPECT_THROW(run_process(request), LaunchError);
}

TEST(Process, TailLinesKeepsTheLastLines) {
  const std::string path = temp_log("tail");
  std::ofstream(path) << "a\nb\nc\nd\n";
  EXPECT_EQ(tail_lines(path, 2), (std::vector<std::string>{"c", "d"}));
  EXPECT_TRUE(tail_lines("/nonexistent/log", 2).empty());
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

TEST(ChildProcess, SeveralChildrenAreWatchedWithoutBlockingAndStoppedOnRequest) {
  ProcessRequest quick;
  quick.argv = {"sh", "-c", "exit 3"};
  ProcessRequest slow;
  slow.argv = {"sleep", "30"};
  ChildProcess first(quick);
  ChildProcess second(slow);
  std::optional<ProcessOutcome> ended;
  for (int i = 0; i < 100 && !ended; ++i) {
    wait_for_any({&first, &second}, 0.1);
    ended = first.poll();
  }
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->exit_code, 3);
  EXPECT_FALSE(second.poll().has_value());  // still running, and poll() did not wait for it
  second.stop();
  const auto stopped = second.poll();
  ASSERT_TRUE(stopped.has_value());
  EXPECT_TRUE(stopped->interrupted);
  EXPECT_LT(stopped->wall_time_s, 20);
}

TEST(Process, TailLinesCutsVeryLongLines) {
  const std::string path = std::filesystem::temp_directory_path() / "harness_process_long_line.log";
  std::ofstream(path) << std::string(200000, 'x') << "\nlast\n";
  const auto lines = tail_lines(path, 2);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_LE(lines[0].size(), 1010U);
  EXPECT_EQ(lines[1], "last");
}

}  // namespace
}  // namespace harness
