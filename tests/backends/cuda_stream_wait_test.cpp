// The host's wait for a CUDA stream (cuda_stream_wait.h) on a GPU (label gpu; skipped without
// one): it stops on a failure found elsewhere, or at its timeout, while the stream is still held,
// and returns once the stream's work is done. The loop's logic is stream_wait_test.cpp's.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "backends/registry.h"
#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda_stream_wait.h"
#include "tests/backends/stream_gate.h"
#endif

namespace harness {
namespace {

#ifdef HARNESS_WITH_CUDA
// A non-blocking stream of the test's own on GPU 0, destroyed at the end.
class OwnStream {
 public:
  OwnStream() {
    cudaSetDevice(0);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  ~OwnStream() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};
#endif

// As backend nccl waits for its reduction: a failure NCCL reports while the stream is held (here
// after 10 polls) ends the wait, where cudaStreamSynchronize would wait for the stream.
TEST(CudaStreamWait, StopsOnAFailureFoundElsewhereWhileTheStreamIsHeld) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
#ifdef HARNESS_WITH_CUDA
  const OwnStream stream;
  StreamGate gate(stream.get());
  int asked = 0;
  const WaitOutcome outcome = wait_for_cuda_stream(
      stream.get(), [&] { return ++asked < 10 ? std::string() : std::string("remote process exited"); });
  EXPECT_EQ(outcome.kind, WaitOutcome::Kind::kFailed);
  EXPECT_EQ(outcome.reason, "remote process exited");
  EXPECT_FALSE(gate.opened_by_watchdog()) << "the wait lasted until the stream was released";
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaErrorNotReady) << "the stream was held all along";
  gate.open();
  EXPECT_TRUE(wait_for_cuda_stream(stream.get()).done());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
#endif
}

TEST(CudaStreamWait, TimesOutOnAHeldStreamAndReturnsOnceItIsReleased) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
#ifdef HARNESS_WITH_CUDA
  const OwnStream stream;
  StreamGate gate(stream.get());
  const WaitOutcome held = wait_for_cuda_stream(stream.get(), {}, std::chrono::milliseconds(100));
  EXPECT_EQ(held.kind, WaitOutcome::Kind::kTimedOut) << held.reason;
  EXPECT_FALSE(gate.opened_by_watchdog());
  gate.open();
  const WaitOutcome released = wait_for_cuda_stream(stream.get(), {}, std::chrono::seconds(10));
  EXPECT_TRUE(released.done()) << released.reason;
#endif
}

// A poll of a busy stream (cudaErrorNotReady) leaves no error behind for a later launch's
// cudaGetLastError to find (the backends check their kernels' launches that way).
TEST(CudaStreamWait, APollOfABusyStreamLeavesNoErrorBehind) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
#ifdef HARNESS_WITH_CUDA
  const OwnStream stream;
  StreamGate gate(stream.get());
  const WorkPoll poll = poll_cuda_stream(stream.get());
  EXPECT_FALSE(poll.done);
  EXPECT_EQ(poll.failure, "");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  gate.open();
#endif
}

}  // namespace
}  // namespace harness
