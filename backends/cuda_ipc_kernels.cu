#include "backends/cuda_ipc_kernels.h"

#include <algorithm>
#include <cstdint>

#include <cuda/atomic>

#include "backends/cuda_ipc_vectors.h"

namespace harness::cuda_ipc {
namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to keep every SM of a large GPU busy (132 on an H100) with a few each; the loops
// stride over whatever is left.
constexpr std::size_t kMaxBlocks = 1024;

unsigned blocks_for(std::size_t work_items, std::size_t max_blocks) {
  const std::size_t wanted = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, max_blocks)));
}

// Where `destination` lies past a 16-byte boundary, in floats (vector_split's argument).
__device__ std::size_t misalignment(const float* destination) {
  return reinterpret_cast<std::uintptr_t>(destination) / sizeof(float) % kFloatsPerVector;
}

__device__ float sum_of_element(const float* const* sources, int ranks, std::size_t i) {
  float sum = sources[0][i];
  for (int r = 1; r < ranks; ++r) sum += sources[r][i];
  return sum;
}

__device__ float4 sum_of_vector(const float* const* sources, int ranks, std::size_t i) {
  float4 sum = *reinterpret_cast<const float4*>(sources[0] + i);
  for (int r = 1; r < ranks; ++r) {
    const float4 value = *reinterpret_cast<const float4*>(sources[r] + i);
    sum.x += value.x;
    sum.y += value.y;
    sum.z += value.z;
    sum.w += value.w;
  }
  return sum;
}

__global__ void sum_over_ranks_kernel(const float* const* sources, int ranks, float* destination, std::size_t begin,
                                      std::size_t end) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const VectorSplit split = vector_split(begin, end, misalignment(destination));
  // Rank order on every rank, element by element as vector by vector: the same bits everywhere.
  for (std::size_t i = begin + thread; i < split.body_begin; i += stride) {
    destination[i] = sum_of_element(sources, ranks, i);
  }
  for (std::size_t i = split.body_begin + thread * kFloatsPerVector; i < split.body_end;
       i += stride * kFloatsPerVector) {
    *reinterpret_cast<float4*>(destination + i) = sum_of_vector(sources, ranks, i);
  }
  for (std::size_t i = split.body_end + thread; i < end; i += stride) {
    destination[i] = sum_of_element(sources, ranks, i);
  }
}

// blockIdx.y is the rank whose slice the block copies.
__global__ void gather_slices_kernel(const float* const* sources, int ranks, float* destination, std::size_t count) {
  const auto rank = static_cast<std::size_t>(blockIdx.y);
  const std::size_t begin = count * rank / static_cast<std::size_t>(ranks);
  const std::size_t end = count * (rank + 1) / static_cast<std::size_t>(ranks);
  const float* source = sources[rank];
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const VectorSplit split = vector_split(begin, end, misalignment(destination));
  for (std::size_t i = begin + thread; i < split.body_begin; i += stride) destination[i] = source[i];
  for (std::size_t i = split.body_begin + thread * kFloatsPerVector; i < split.body_end;
       i += stride * kFloatsPerVector) {
    *reinterpret_cast<float4*>(destination + i) = *reinterpret_cast<const float4*>(source + i);
  }
  for (std::size_t i = split.body_end + thread; i < end; i += stride) destination[i] = source[i];
}

__global__ void one_shot_with_arrival_kernel(float* buffer, const float* const* sources, int ranks, int me,
                                             std::uint32_t* const* flags, BlockEpochs epochs, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint32_t epoch = epochs.value[blockIdx.x];
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
      // A peer a call ahead has written this block's next epoch already: it counts.
      while (!epoch_reached(heard.load(cuda::memory_order_acquire), epoch)) {
      }
    }
  }
  __syncthreads();
  for (std::size_t i = first; i < count; i += stride) buffer[i] = sum_of_element(sources, ranks, i);
}

}  // namespace

cudaError_t one_shot_with_arrival(float* buffer, const float* const* sources, int ranks, int me,
                                  std::uint32_t* const* flags, const BlockEpochs& epochs, std::size_t count,
                                  cudaStream_t stream) {
  if (count == 0 || ranks < 1 || count > kOneShotWithArrivalMaxCount || static_cast<unsigned>(ranks) > kThreads) {
    return cudaErrorInvalidValue;
  }
  static_assert(kOneKernelThreads == kThreads, "one_kernel_blocks counts blocks of this kernel's threads");
  one_shot_with_arrival_kernel<<<one_kernel_blocks(count), kThreads, 0, stream>>>(buffer, sources, ranks, me, flags,
                                                                                  epochs, count);
  return cudaGetLastError();
}

cudaError_t sum_over_ranks(const float* const* sources, int ranks, float* destination, std::size_t begin,
                           std::size_t end, cudaStream_t stream) {
  if (begin >= end || ranks < 1) return cudaSuccess;
  const std::size_t vectors = (end - begin + kFloatsPerVector - 1) / kFloatsPerVector;
  sum_over_ranks_kernel<<<blocks_for(vectors, kMaxBlocks), kThreads, 0, stream>>>(sources, ranks, destination, begin,
                                                                                  end);
  return cudaGetLastError();
}

cudaError_t gather_slices(const float* const* sources, int ranks, float* destination, std::size_t count,
                          cudaStream_t stream) {
  if (count == 0 || ranks < 1) return cudaSuccess;
  const std::size_t largest_slice = (count + ranks - 1) / ranks;
  const std::size_t vectors = (largest_slice + kFloatsPerVector - 1) / kFloatsPerVector;
  const dim3 grid(blocks_for(vectors, std::max<std::size_t>(1, kMaxBlocks / ranks)), static_cast<unsigned>(ranks));
  gather_slices_kernel<<<grid, kThreads, 0, stream>>>(sources, ranks, destination, count);
  return cudaGetLastError();
}

}  // namespace harness::cuda_ipc
