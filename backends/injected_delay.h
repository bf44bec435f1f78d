// Fault injection for testing regression gates: a GradientSync that waits a fixed time inside
// every call of the backend it wraps (setting "inject_comm_delay_us"). A gate that does not fire
// on a run with a delay well above its noise cannot be trusted to fire on a real regression.
//
// Contract: as the wrapped backend's (gradient_sync.h); the wait happens on the calling thread,
// before the wrapped call, on every rank, so the slowest rank's time per call grows by the delay.
#pragma once

#include <memory>
#include <string_view>

#include "backends/gradient_sync.h"

namespace harness {

// A straggler on purpose (settings "inject_compute_delay_ms" and "inject_compute_delay_rank"):
// the training loops call this inside every step's compute; on rank `delay_rank` it sleeps
// `delay_ms` (a sleeping rank gives its core away, as a rank slowed by a noisy neighbour does),
// on every other rank it returns at once.
void inject_compute_delay(int rank, int delay_rank, double delay_ms);

class InjectedDelay final : public GradientSync {
 public:
  InjectedDelay(std::unique_ptr<GradientSync> backend, double delay_us);

  std::string_view name() const override { return backend_->name(); }
  void allreduce_sum(std::span<float> buffer) override;
  std::shared_ptr<float> allocate_buffer(std::size_t count) override { return backend_->allocate_buffer(count); }
  bool exchanges() const override { return backend_->exchanges(); }
  int host_threads() const override { return backend_->host_threads(); }

 private:
  std::unique_ptr<GradientSync> backend_;
  double delay_us_;
};

}  // namespace harness
