#include "backends/injected_delay.h"

#include <chrono>
#include <cstdint>
#include <thread>

namespace harness {

void inject_compute_delay(int rank, int delay_rank, double delay_ms) {
  if (rank != delay_rank || delay_ms <= 0) return;
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(delay_ms * 1e6)));
}

InjectedDelay::InjectedDelay(std::unique_ptr<GradientSync> backend, double delay_us)
    : ForwardingSync(std::move(backend)), delay_us_(delay_us) {}

void InjectedDelay::before_call() {
  // Spin, as a rank waiting inside MPI does: a sleeping rank gives its core away, and on a busy
  // machine gets it back a scheduler slice later (milliseconds instead of the microseconds asked
  // for). Only the part of a long delay beyond kSpin sleeps.
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(delay_us_ * 1000));
  constexpr auto kSpin = std::chrono::milliseconds(20);
  if (until - Clock::now() > kSpin) std::this_thread::sleep_until(until - kSpin);
  while (Clock::now() < until) {
  }
}

}  // namespace harness
