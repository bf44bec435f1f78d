// The kernels of backend `cuda_ipc` (cuda_ipc_allreduce.h), compiled by nvcc in a CUDA build
// only (cuda_ipc_kernels.cu). Plain C++17 for both compilers; no LibTorch, no MPI.
//
// `sources` is a device array of `ranks` device pointers, rank r's region at index r (peers'
// regions mapped through CUDA IPC). Each function queues its kernel on `stream` (nothing when
// there is nothing to do) and returns the launch's status (cudaGetLastError).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

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

}  // namespace harness::cuda_ipc
