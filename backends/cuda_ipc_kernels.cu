#include "backends/cuda_ipc_kernels.h"

#include <algorithm>

#include <cuda/atomic>

namespace harness::cuda_ipc {
namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to keep every SM of a large GPU busy (132 on an H100) with a few each; the loops
// stride over whatever is left.
constexpr std::size_t kMaxBlocks = 1024;

unsigned blocks_for(std::size_t elements, std::size_t max_blocks) {
  const std::size_t wanted = (elements + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, max_blocks)));
}

__global__ void sum_over_ranks_kernel(const float* const* sources, int ranks, float* destination, std::size_t begin,
                                      std::size_t end) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = begin + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += stride) {
    // Rank order on every rank: the same bits everywhere.
    float sum = sources[0][i];
    for (int r = 1; r < ranks; ++r) sum += sources[r][i];
    destination[i] = sum;
  }
}

// blockIdx.y is the rank whose slice the block copies.
__global__ void gather_slices_kernel(const float* const* sources, int ranks, float* destination, std::size_t count) {
  const auto rank = static_cast<std::size_t>(blockIdx.y);
  const std::size_t begin = count * rank / static_cast<std::size_t>(ranks);
  const std::size_t end = count * (rank + 1) / static_cast<std::size_t>(ranks);
  const float* source = sources[rank];
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = begin + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += stride) {
    destination[i] = source[i];
  }
}

__global__ void one_shot_with_arrival_kernel(float* buffer, const float* const* sources, int ranks, int me,
                                             std::uint32_t* const* flags, std::uint32_t epoch, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto* mine = const_cast<float*>(sources[me]);
  for (std::size_t i = first; i < count; i += stride) mine[i] = buffer[i];
  // Every thread's copy is ordered before the release stores below by the barrier; a release is
  // cumulative over what its thread has observed.
  __syncthreads();
  const auto slot = static_cast<std::size_t>(blockIdx.x) * static_cast<std::size_t>(ranks);
  if (static_cast<int>(threadIdx.x) < ranks) {
    const auto rank = static_cast<int>(threadIdx.x);
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system> told(flags[rank][slot + static_cast<std::size_t>(me)]);
    told.store(epoch, cuda::memory_order_release);
    if (rank != me) {
      cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system> heard(flags[me][slot + static_cast<std::size_t>(rank)]);
      // A peer a call ahead has written epoch + 1 already: cyclic "at least".
      while (static_cast<std::int32_t>(heard.load(cuda::memory_order_acquire) - epoch) < 0) {
      }
    }
  }
  __syncthreads();
  for (std::size_t i = first; i < count; i += stride) {
    float sum = sources[0][i];
    for (int r = 1; r < ranks; ++r) sum += sources[r][i];
    buffer[i] = sum;
  }
}

}  // namespace

cudaError_t one_shot_with_arrival(float* buffer, const float* const* sources, int ranks, int me,
                                  std::uint32_t* const* flags, std::uint32_t epoch, std::size_t count,
                                  cudaStream_t stream) {
  if (count == 0 || ranks < 1 || count > kOneShotWithArrivalMaxCount || static_cast<unsigned>(ranks) > kThreads) {
    return cudaErrorInvalidValue;
  }
  one_shot_with_arrival_kernel<<<blocks_for(count, kOneShotWithArrivalBlocks), kThreads, 0, stream>>>(
      buffer, sources, ranks, me, flags, epoch, count);
  return cudaGetLastError();
}

cudaError_t sum_over_ranks(const float* const* sources, int ranks, float* destination, std::size_t begin,
                           std::size_t end, cudaStream_t stream) {
  if (begin >= end || ranks < 1) return cudaSuccess;
  sum_over_ranks_kernel<<<blocks_for(end - begin, kMaxBlocks), kThreads, 0, stream>>>(sources, ranks, destination,
                                                                                       begin, end);
  return cudaGetLastError();
}

cudaError_t gather_slices(const float* const* sources, int ranks, float* destination, std::size_t count,
                          cudaStream_t stream) {
  if (count == 0 || ranks < 1) return cudaSuccess;
  const std::size_t largest_slice = (count + ranks - 1) / ranks;
  const dim3 grid(blocks_for(largest_slice, std::max<std::size_t>(1, kMaxBlocks / ranks)), static_cast<unsigned>(ranks));
  gather_slices_kernel<<<grid, kThreads, 0, stream>>>(sources, ranks, destination, count);
  return cudaGetLastError();
}

}  // namespace harness::cuda_ipc
