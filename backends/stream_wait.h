// Waiting from the host for work queued on a GPU without blocking inside the driver, so that the
// wait can stop on a failure reported elsewhere (NCCL's asynchronous errors: a peer gone, a
// network fault) or at a deadline, where cudaStreamSynchronize would wait forever. The loop that
// NCCL's documentation and nccl-tests put around cudaStreamQuery and ncclCommGetAsyncError.
// No CUDA here: what is polled is a function, so that the loop is tested where no GPU is;
// cuda_stream_wait.h binds it to a CUDA stream.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace harness {

// One look at the queued work: done, still running, or failed (`failure` says how).
struct WorkPoll {
  bool done = false;
  std::string failure;  // non-empty: the work failed, and will never be done

  static WorkPoll pending() { return {}; }
  static WorkPoll finished() { return {true, ""}; }
  static WorkPoll failed(std::string why) { return {false, std::move(why)}; }
};

struct WaitOutcome {
  enum class Kind { kDone, kFailed, kTimedOut };
  Kind kind = Kind::kDone;
  std::string reason;  // kFailed: the failure; kTimedOut: how long it waited
  bool done() const { return kind == Kind::kDone; }
};

// Polls `work` until it is done or fails; between polls asks `async_failure` (null: nothing to
// ask) for a failure found elsewhere ("" while there is none), and stops at the first; and stops
// after `timeout` when one is given. Spins (yielding the core) for the first milliseconds, as a
// spinning cudaStreamSynchronize would, so short waits cost no sleep; then sleeps between polls.
// Returns kDone only once `work` said so.
WaitOutcome wait_until_done(const std::function<WorkPoll()>& work, const std::function<std::string()>& async_failure,
                            std::optional<std::chrono::nanoseconds> timeout = std::nullopt);

}  // namespace harness
