#pragma once

// The CUDA driver's stream memory operations (cuStreamWriteValue32, cuStreamWaitValue32), found
// through the runtime (cudaGetDriverEntryPoint*), so that the build links no libcuda: a 32-bit
// write, and a wait until a 32-bit value in device memory reaches one, each queued on a stream
// like a kernel and carried out by the GPU's front end, not by its SMs. A wait holds no SM, so
// processes that time-slice one GPU cannot deadlock on it (backend cuda_ipc's arrivals). For the
// backends' CUDA code only: include it under HARNESS_WITH_CUDA.

#include <cstdint>

#include <cuda.h>  // the driver API's types and flags only
#include <cuda_runtime_api.h>

namespace harness {

// A driver API function by name, as the CUDA 12.0 API has it; nullptr where this driver or
// runtime lacks it.
inline void* cuda_driver_function(const char* symbol) {
#if CUDART_VERSION >= 12000
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t status = cudaGetDriverEntryPointByVersion(symbol, &function, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t status = cudaGetDriverEntryPoint(symbol, &function, cudaEnableDefault, &found);
#endif
  if (status == cudaSuccess && found == cudaDriverEntryPointSuccess) return function;
  cudaGetLastError();  // not sticky; clear it
#else
  (void)symbol;
#endif
  return nullptr;
}

struct StreamMemoryOperations {
  using Operation = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  Operation write_value = nullptr;  // cuStreamWriteValue32: fences the stream's earlier writes first
  Operation wait_value = nullptr;   // cuStreamWaitValue32

  static StreamMemoryOperations found() {
    return {reinterpret_cast<Operation>(cuda_driver_function("cuStreamWriteValue32")),
            reinterpret_cast<Operation>(cuda_driver_function("cuStreamWaitValue32"))};
  }
  bool usable() const { return write_value != nullptr && wait_value != nullptr; }
};

inline CUdeviceptr device_address(const void* pointer) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(pointer));
}

}  // namespace harness
