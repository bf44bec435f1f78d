#include "tests/backends/gpu_test_work.h"

#include <cstdint>

namespace harness::gpu_test {
namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void busy_kernel(std::uint64_t nanoseconds) {
  const std::uint64_t started = global_ns();
  while (global_ns() - started < nanoseconds) __nanosleep(1000);
}

__global__ void fill_kernel(float* buffer, std::size_t count, int rank, int round) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    buffer[i] = static_cast<float>(static_cast<long>((i * 7 + static_cast<std::size_t>(round) * 3) % 13) - 6 + rank);
  }
}

}  // namespace

cudaError_t queue_busy_kernel(unsigned microseconds) {
  busy_kernel<<<1, 1, 0, cudaStreamLegacy>>>(std::uint64_t{microseconds} * 1000);
  return cudaGetLastError();
}

cudaError_t queue_fill(float* buffer, std::size_t count, int rank, int round) {
  if (count == 0) return cudaSuccess;
  const std::size_t blocks = (count + 255) / 256;
  fill_kernel<<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), 256, 0, cudaStreamLegacy>>>(buffer, count, rank,
                                                                                                  round);
  return cudaGetLastError();
}

}  // namespace harness::gpu_test
