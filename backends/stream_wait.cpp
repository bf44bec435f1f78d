#include "backends/stream_wait.h"

#include <thread>

#include <fmt/format.h>

namespace harness {
namespace {

// Polls without sleeping for this long: a reduction of up to some MiB is done by then, and its
// caller is not made to wait out a sleep. Longer waits poll every kSleepBetweenPolls.
constexpr std::chrono::milliseconds kSpinFor{20};
constexpr std::chrono::microseconds kSleepBetweenPolls{100};

}  // namespace

WaitOutcome wait_until_done(const std::function<WorkPoll()>& work, const std::function<std::string()>& async_failure,
                            std::optional<std::chrono::nanoseconds> timeout) {
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    const WorkPoll poll = work();
    if (!poll.failure.empty()) return {WaitOutcome::Kind::kFailed, poll.failure};
    if (poll.done) return {};
    if (async_failure) {
      if (std::string failure = async_failure(); !failure.empty())
        return {WaitOutcome::Kind::kFailed, std::move(failure)};
    }
    const auto waited = std::chrono::steady_clock::now() - started;
    if (timeout && waited >= *timeout) {
      return {WaitOutcome::Kind::kTimedOut,
              fmt::format("not done after {:.3f} s", std::chrono::duration<double>(waited).count())};
    }
    if (waited < kSpinFor) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kSleepBetweenPolls);
    }
  }
}

}  // namespace harness
