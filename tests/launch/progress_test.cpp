#include "harness/launch/progress.h"

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <thread>

namespace harness {
namespace {

// Captures std::cout for the lifetime of the object.
class CapturedOutput {
 public:
  CapturedOutput() : previous_(std::cout.rdbuf(buffer_.rdbuf())) {}
  ~CapturedOutput() { std::cout.rdbuf(previous_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* previous_;
};

TEST(Progress, DurationsReadNaturally) {
  EXPECT_EQ(format_duration(0.25), "0.2 s");
  EXPECT_EQ(format_duration(9.4), "9.4 s");
  EXPECT_EQ(format_duration(42), "42 s");
  EXPECT_EQ(format_duration(200), "3 min 20 s");
  EXPECT_EQ(format_duration(7500), "2 h 05 min");
}

TEST(Progress, PlainLinesCarryTheOutcomeAndTheTimeLeft) {
  CapturedOutput output;
  Progress progress(3, /*live=*/false);
  progress.start_point("[1/4] a");
  progress.finish_point(" ok (2.0 s)", 2.0);
  progress.start_point("[2/4] b");
  progress.skip_point(" kept (completed in an earlier run)");
  progress.start_point("[3/4] c");
  progress.finish_point(" ok (4.0 s)", 4.0);
  progress.start_point("[4/4] d");
  progress.finish_point(" FAILED: x", 3.0);
  EXPECT_EQ(output.text(),
            "[1/4] a ok (2.0 s), about 4.0 s left\n"
            "[2/4] b kept (completed in an earlier run)\n"
            "[3/4] c ok (4.0 s), about 3.0 s left\n"
            "[4/4] d FAILED: x\n");
}

TEST(Progress, TerminalLineIsRedrawnWhileThePointRuns) {
  CapturedOutput output;
  Progress progress(2, /*live=*/true);
  progress.start_point("[1/2] a");
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  progress.finish_point(" ok", 1.3);
  const std::string text = output.text();
  EXPECT_NE(text.find("\r\033[K[1/2] a  running 1.0 s"), std::string::npos) << text;
  const std::string last = "\r\033[K[1/2] a ok, about 1.3 s left\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

}  // namespace
}  // namespace harness
