// The kernels of backend `cuda_ipc` (cuda_ipc_allreduce.h), compiled by nvcc in a CUDA build
// only (cuda_ipc_kernels.cu). Plain C++17 for both compilers; no LibTorch, no MPI.
//
// `sources` is a device array of `ranks` device pointers, rank r's region at index r (peers'
// regions mapped through CUDA IPC), each 16-byte aligned at element 0. Each function queues its
// kernel on `stream` (nothing when there is nothing to do) and returns the launch's status
// (cudaGetLastError). sum_over_ranks and gather_slices move 16-byte vectors over the part of the
// range where the destination is aligned as the regions are, one element at a time elsewhere
// (cuda_ipc_vectors.h): the same sums, in the same order, either way.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda_ipc_epochs.h"

namespace harness::cuda_ipc {

// destination[i] = sources[0][i] + sources[1][i] + ... + sources[ranks - 1][i], added in that
// order, for i in [begin, end). `destination` may be one of the sources (each element is read
// from every source before it is written).
cudaError_t sum_over_ranks(const float* const* sources, int ranks, float* destination, std::size_t begin,
                           std::size_t end, cudaStream_t stream);

// destination[i] = sources[r][i] for every i of slice r, for every rank r: the slices of `count`
// elements are [count r / ranks, count (r + 1) / ranks).
cudaError_t gather_slices(const float* const* sources, int ranks, float* destination, std::size_t count,
                          cudaStream_t stream);

// The one-shot allreduce of a small buffer in one kernel, arrivals included (vLLM's custom
// all-reduce does the same): block b of rank `me` copies its elements of `buffer` into this rank's
// region (`sources[me]`), tells every rank so (flags[r][b * ranks + me] = epochs.value[b], a
// release store at system scope), waits until every rank's block b has told it the same
// (flags[me][b * ranks + r] has reached that epoch: epoch_reached), then sums those elements over
// every rank's region, in rank order, into `buffer`. Block b handles the same elements in both
// phases, so it waits only for the blocks whose data it reads. It runs one_kernel_blocks(count)
// blocks, and `epochs` are the block's own (BlockEpochs, cuda_ipc_epochs.h). Its blocks spin while
// they wait, so every rank's kernel must be resident at once: under MPS or on GPUs of their own.
// At most kOneShotWithArrivalMaxCount elements.
constexpr std::size_t kOneShotWithArrivalMaxCount = 131072;  // 512 KiB of floats: 16 a thread
cudaError_t one_shot_with_arrival(float* buffer, const float* const* sources, int ranks, int me,
                                  std::uint32_t* const* flags, const BlockEpochs& epochs, std::size_t count,
                                  cudaStream_t stream);

}  // namespace harness::cuda_ipc
