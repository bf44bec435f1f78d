#pragma once

// Turns a failed CUDA runtime call into the CommError that stops the point with its reason. For the
// backends' CUDA code only: include it under HARNESS_WITH_CUDA.

#include <string_view>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {

// "cudaMalloc failed: out of memory", after `who` ("nccl: ") where a backend names itself.
inline void check_cuda_call(cudaError_t code, std::string_view operation, std::string_view who = "") {
  if (code == cudaSuccess) return;
  throw CommError(fmt::format("{}{} failed: {}", who, operation, cudaGetErrorString(code)));
}

}  // namespace harness
