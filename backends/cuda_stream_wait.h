#pragma once

// wait_until_done (stream_wait.h) on a CUDA stream: cudaStreamQuery is the poll. For the
// backends' CUDA code only: include it under HARNESS_WITH_CUDA.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "backends/stream_wait.h"

namespace harness {

// Whether the work queued on `stream` so far is done, or the GPU's failure.
inline WorkPoll poll_cuda_stream(cudaStream_t stream) {
  const cudaError_t status = cudaStreamQuery(stream);
  if (status == cudaSuccess) return WorkPoll::finished();
  // Not an error, but the runtime may keep it as the thread's last one, where a later launch's
  // check (cudaGetLastError) would find it: clear it, as PyTorch's CUDAStream::query does.
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return WorkPoll::pending();
  }
  return WorkPoll::failed(fmt::format("cudaStreamQuery failed: {}", cudaGetErrorString(status)));
}

inline WaitOutcome wait_for_cuda_stream(cudaStream_t stream, const std::function<std::string()>& async_failure = {},
                                        std::optional<std::chrono::nanoseconds> timeout = std::nullopt) {
  return wait_until_done([stream] { return poll_cuda_stream(stream); }, async_failure, timeout);
}

}  // namespace harness
