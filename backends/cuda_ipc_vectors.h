// How backend cuda_ipc's kernels (cuda_ipc_kernels.cu) cut a range of elements for 16-byte
// loads and stores (float4): a scalar head up to the first element where every array is 16-byte
// aligned, a body of whole vectors, and a scalar tail. One 16-byte access moves what four 4-byte
// ones move, with a quarter of the instructions and memory transactions in flight; what each
// element sums, and in which order, is the same. Plain C++17 for nvcc and the host compiler, so
// that the split is tested where no GPU is.
#pragma once

#include <cstddef>

#include "backends/cuda_ipc_epochs.h"  // HARNESS_HOST_DEVICE

namespace harness::cuda_ipc {

constexpr std::size_t kFloatsPerVector = 4;  // a float4: 16 bytes

// Elements [begin, body_begin) and [body_end, end) one at a time, [body_begin, body_end) as
// vectors: body_begin and body_end are multiples of kFloatsPerVector.
struct VectorSplit {
  std::size_t body_begin = 0;
  std::size_t body_end = 0;
};

// The split of elements [begin, end) of arrays whose element 0 is 16-byte aligned (the registered
// regions), read and written with a destination whose element 0 lies `destination_misalignment`
// floats past a 16-byte boundary (0 to 3; a caller's buffer may start anywhere a float may).
// Where the destination is not aligned as the regions are, no element is aligned for both, and
// the body is empty: every element goes one at a time, as before vectors.
HARNESS_HOST_DEVICE constexpr VectorSplit vector_split(std::size_t begin, std::size_t end,
                                                       std::size_t destination_misalignment) {
  if (end <= begin || destination_misalignment % kFloatsPerVector != 0) return {begin, begin};
  std::size_t body_begin = (begin + kFloatsPerVector - 1) / kFloatsPerVector * kFloatsPerVector;
  if (body_begin > end) body_begin = end;
  const std::size_t body_end = body_begin + (end - body_begin) / kFloatsPerVector * kFloatsPerVector;
  return {body_begin, body_end};
}

}  // namespace harness::cuda_ipc
