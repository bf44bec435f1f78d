// Holds a CUDA stream at one point of its queue until the test opens the gate: a host function
// queued there (cudaLaunchHostFunc) waits for it. For tests of what waits for what on a GPU, such
// as the work a training thread queues on the legacy default stream while a reduction runs.
// CUDA builds only (HARNESS_WITH_CUDA); the test binary links the CUDA runtime.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace harness {

class StreamGate {
 public:
  // Queues the gate on `stream`; it opens by itself after `at_most` (so that a test of code that
  // wrongly waits for it fails instead of hanging).
  explicit StreamGate(cudaStream_t stream, std::chrono::milliseconds at_most = std::chrono::seconds(5))
      : state_(std::make_shared<State>()) {
    // The host function may run after this object is gone: it owns a share of the state.
    auto* share = new std::shared_ptr<State>(state_);
    if (cudaLaunchHostFunc(stream, &hold, share) != cudaSuccess) {
      delete share;
      throw std::runtime_error("cudaLaunchHostFunc failed");
    }
    watchdog_ = std::jthread([state = state_, at_most](std::stop_token stop) {
      const auto until = std::chrono::steady_clock::now() + at_most;
      while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!stop.stop_requested() && !state->opened.load()) state->by_watchdog = true;
      open(*state);
    });
  }
  ~StreamGate() { open(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  void open() {
    watchdog_.request_stop();
    open(*state_);
  }
  // Whether the stream has reached the gate (its work before it is done).
  bool reached() const { return state_->reached.load(); }
  // Whether the gate was opened by the watchdog rather than by the test: something waited for it.
  bool opened_by_watchdog() const { return state_->by_watchdog.load(); }

 private:
  struct State {
    std::atomic<bool> reached{false};
    std::atomic<bool> opened{false};
    std::atomic<bool> by_watchdog{false};
  };

  static void open(State& state) {
    if (!state.opened.exchange(true)) state.opened.notify_all();
  }

  static void CUDART_CB hold(void* data) {
    const std::unique_ptr<std::shared_ptr<State>> share(static_cast<std::shared_ptr<State>*>(data));
    State& state = **share;
    state.reached = true;
    state.opened.wait(false);
  }

  std::shared_ptr<State> state_;
  std::jthread watchdog_;
};

}  // namespace harness
