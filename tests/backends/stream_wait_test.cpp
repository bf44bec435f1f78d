// The host's wait for a GPU's queued work (stream_wait.h), with the work and the failures found
// elsewhere played by functions: where it stops, and that it never stops early. On a CUDA stream
// it is cuda_stream_wait_test.cpp's (label gpu).
#include "backends/stream_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace harness {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(StreamWait, ReturnsOnceTheWorkIsDone) {
  int polls = 0;
  int asked = 0;
  const WaitOutcome outcome = wait_until_done([&] { return ++polls == 6 ? WorkPoll::finished() : WorkPoll::pending(); },
                                              [&] {
                                                ++asked;
                                                return std::string();
                                              });
  EXPECT_EQ(outcome.kind, WaitOutcome::Kind::kDone);
  EXPECT_TRUE(outcome.done());
  EXPECT_EQ(polls, 6);
  EXPECT_EQ(asked, 5) << "asked between polls, not after the work was done";
}

// What NCCL reports while its kernels wait forever for a peer that is gone: the wait stops at the
// first such failure and says it, although the work is not done.
TEST(StreamWait, StopsAtTheFirstFailureFoundElsewhereWhileTheWorkIsPending) {
  int polls = 0;
  int asked = 0;
  const WaitOutcome outcome = wait_until_done(
      [&] {
        ++polls;
        return WorkPoll::pending();
      },
      [&] { return ++asked < 4 ? std::string() : std::string("remote process exited"); });
  EXPECT_EQ(outcome.kind, WaitOutcome::Kind::kFailed);
  EXPECT_EQ(outcome.reason, "remote process exited");
  EXPECT_EQ(asked, 4);
  EXPECT_EQ(polls, 4) << "no poll after the failure";
}

TEST(StreamWait, ReportsTheWorksOwnFailure) {
  int asked = 0;
  const WaitOutcome outcome = wait_until_done([] { return WorkPoll::failed("an illegal memory access"); },
                                              [&] {
                                                ++asked;
                                                return std::string();
                                              });
  EXPECT_EQ(outcome.kind, WaitOutcome::Kind::kFailed);
  EXPECT_EQ(outcome.reason, "an illegal memory access");
  EXPECT_EQ(asked, 0);
}

TEST(StreamWait, StopsAtItsTimeoutWhereTheWorkNeverEnds) {
  const auto started = steady_clock::now();
  const WaitOutcome outcome = wait_until_done([] { return WorkPoll::pending(); }, nullptr, milliseconds(60));
  const auto waited = steady_clock::now() - started;
  EXPECT_EQ(outcome.kind, WaitOutcome::Kind::kTimedOut);
  EXPECT_EQ(outcome.reason.rfind("not done after 0.0", 0), 0U) << outcome.reason;
  EXPECT_GE(waited, milliseconds(60));
  EXPECT_LT(waited, milliseconds(5000));
}

// Past the first milliseconds it sleeps between polls, and still sees the work end; without a
// timeout it waits as long as the work takes.
TEST(StreamWait, WaitsAsLongAsTheWorkTakesWithoutATimeout) {
  const auto until = steady_clock::now() + milliseconds(80);
  const WaitOutcome outcome = wait_until_done(
      [&] { return steady_clock::now() >= until ? WorkPoll::finished() : WorkPoll::pending(); }, nullptr);
  EXPECT_EQ(outcome.kind, WaitOutcome::Kind::kDone);
  EXPECT_GE(steady_clock::now(), until);
}

}  // namespace
}  // namespace harness
