#include "backends/injected_delay.h"

#include <chrono>
#include <thread>

namespace harness {

InjectedDelay::InjectedDelay(std::unique_ptr<GradientSync> backend, double delay_us)
    : backend_(std::move(backend)), delay_us_(delay_us) {}

void InjectedDelay::allreduce_sum(std::span<float> buffer) {
  // Sleep for most of it and spin the rest: a sleep alone overshoots by tens of microseconds,
  // which would make a small delay larger than asked for.
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(delay_us_ * 1000));
  constexpr auto kSpin = std::chrono::microseconds(200);
  if (until - Clock::now() > kSpin) std::this_thread::sleep_until(until - kSpin);
  while (Clock::now() < until) {
  }
  backend_->allreduce_sum(buffer);
}

}  // namespace harness
