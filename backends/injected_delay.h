// Fault injection for testing regression gates: a GradientSync that waits a fixed time inside
// every call of the backend it wraps (setting "inject_comm_delay_us"). A gate that does not fire
// on a run with a delay well above its noise cannot be trusted to fire on a real regression.
//
// Contract: as the wrapped backend's (gradient_sync.h); the wait happens on the calling thread,
// before the wrapped call, on every rank, so the slowest rank's time per call grows by the delay.
#pragma once

#include <memory>
#include <string_view>

#include "backends/forwarding_sync.h"

namespace harness {

// A straggler on purpose (settings "inject_compute_delay_ms" and "inject_compute_delay_rank"):
// the training loops call this inside every step's compute; on rank `delay_rank` it sleeps
// `delay_ms` (a sleeping rank gives its core away, as a rank slowed by a noisy neighbour does),
// on every other rank it returns at once.
void inject_compute_delay(int rank, int delay_rank, double delay_ms);

class InjectedDelay final : public ForwardingSync {
 public:
  InjectedDelay(std::unique_ptr<GradientSync> backend, double delay_us);

 private:
  void before_call() override;

  double delay_us_;
};

}  // namespace harness
