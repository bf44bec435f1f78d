// Work that the GPU tests queue on a rank's legacy default stream, where the trainer's kernels
// go: a kernel that keeps the stream busy (a rank whose GPU lags behind its host, as when a
// backward pass is still running), and one that writes a buffer's values there (what wrote the
// gradients). Compiled by nvcc (gpu_test_work.cu) in the CUDA configuration only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace harness::gpu_test {

// Queues a one-thread kernel that spins for `microseconds` on the legacy default stream.
cudaError_t queue_busy_kernel(unsigned microseconds);

// Queues a kernel that writes fill_value(i, rank, round) into buffer[i] for i in [0, count), on
// the legacy default stream.
cudaError_t queue_fill(float* buffer, std::size_t count, int rank, int round);

// Small integers, so that every sum over ranks is exact in float whatever the order.
inline float fill_value(std::size_t i, int rank, int round) {
  return static_cast<float>(static_cast<long>((i * 7 + static_cast<std::size_t>(round) * 3) % 13) - 6 + rank);
}

}  // namespace harness::gpu_test
