#include "harness/launch/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

namespace harness {
namespace {

TEST(Progress, DurationsReadNaturally) {
  EXPECT_EQ(format_duration(0.25), "0.2 s");
  EXPECT_EQ(format_duration(9.4), "9.4 s");
  EXPECT_EQ(format_duration(42), "42 s");
  EXPECT_EQ(format_duration(200), "3 min 20 s");
  EXPECT_EQ(format_duration(7500), "2 h 05 min");
}

TEST(Progress, PlainLinesCarryTheOutcomeAndTheTimeLeft) {
  std::ostringstream out;
  {
    Progress progress(3, /*live=*/false, 1, out);
    progress.started("[1/4] a");
    progress.finished("[1/4] a", " ok (2.0 s)", 2.0);
    progress.kept("[2/4] b", " kept (completed in an earlier run)");
    progress.started("[3/4] c");
    progress.finished("[3/4] c", " ok (4.0 s)", 4.0);
    progress.started("[4/4] d");
    progress.finished("[4/4] d", " FAILED: x", 3.0, {"    log: d.log"});
  }
  EXPECT_EQ(out.str(),
            "[1/4] a ok (2.0 s), about 4.0 s left\n"
            "[2/4] b kept (completed in an earlier run)\n"
            "[3/4] c ok (4.0 s), about 3.0 s left\n"
            "[4/4] d FAILED: x\n"
            "    log: d.log\n");
}

TEST(Progress, SeveralPointsAtOnceGetALineEachForStartAndEnd) {
  std::ostringstream out;
  {
    Progress progress(2, /*live=*/false, 2, out);
    progress.started("[1/2] p000-a x");
    progress.started("[2/2] p001-b y");
    progress.finished("[2/2] p001-b y", " ok (1.0 s)", 1.0);
    progress.finished("[1/2] p000-a x", " ok (2.0 s)", 2.0);
  }
  EXPECT_EQ(out.str(),
            "[1/2] p000-a x started\n"
            "[2/2] p001-b y started\n"
            "[2/2] p001-b y ok (1.0 s), about 0.5 s left\n"
            "[1/2] p000-a x ok (2.0 s)\n");
}

TEST(Progress, TerminalLineListsTheRunningPoints) {
  std::ostringstream out;
  Progress progress(3, /*live=*/true, 2, out);
  progress.started("[1/3] p000-a x");
  progress.started("[2/3] p001-b y");
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  const std::string text = out.str();
  EXPECT_NE(text.find("\r\033[Krunning p000 (1."), std::string::npos) << text;
  EXPECT_NE(text.find(", p001 (1."), std::string::npos) << text;
  progress.finished("[1/3] p000-a x", " ok", 1.3);
  progress.finished("[2/3] p001-b y", " ok", 1.3);
}

TEST(Progress, TerminalLineIsRedrawnWhileThePointRuns) {
  std::ostringstream out;
  Progress progress(2, /*live=*/true, 1, out);
  progress.started("[1/2] a");
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  progress.finished("[1/2] a", " ok", 1.3);
  const std::string text = out.str();
  EXPECT_NE(text.find("\r\033[K[1/2] a  running 1.0 s"), std::string::npos) << text;
  const std::string last = "\r\033[K[1/2] a ok, about 1.3 s left\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

}  // namespace
}  // namespace harness
