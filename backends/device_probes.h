// What a rank's GPU allows, for the comm benchmark's limits on device "cuda": the time of one copy
// of a whole buffer, pinned host memory to device and back (what bounds staging) and device to
// device (what bounds a backend that reduces in device memory), timed on the GPU with CUDA
// events around the copy on a stream of the probes' own.
//
// A device-to-device copy stands in for the `a += b` of device memory that issue 30 measured: it
// reads the buffer and writes it once (2 bytes of memory traffic per byte), where `a += b` reads
// two and writes one (3), each at the memory's rate, so no kernel of the harness's own is needed.
//
// Compiled in every build: without HARNESS_WITH_CUDA the constructor throws NotSupported.
// Threading: one thread at a time, whose current GPU is the one to probe.
#pragma once

#include <cstddef>

#include "backends/device_staging.h"  // DeviceBuffer, CUstream_st, CUevent_st

namespace harness {

class DeviceCopyProbes {
 public:
  // Two buffers of `count` floats on the current GPU and one in pinned host memory; count > 0.
  explicit DeviceCopyProbes(std::size_t count);
  ~DeviceCopyProbes();
  DeviceCopyProbes(const DeviceCopyProbes&) = delete;
  DeviceCopyProbes& operator=(const DeviceCopyProbes&) = delete;

  // Seconds that one copy of the whole buffer took on the GPU (cudaEventElapsedTime).
  double device_to_host_s();
  double host_to_device_s();
  double device_to_device_s();

 private:
  double timed_copy_s(void* to, const void* from, int kind);  // kind: a cudaMemcpyKind
  void release() noexcept;

  std::size_t count_;
  DeviceBuffer source_;
  DeviceBuffer destination_;
  float* pinned_ = nullptr;  // cudaMallocHost
  CUstream_st* stream_ = nullptr;
  CUevent_st* start_ = nullptr;
  CUevent_st* stop_ = nullptr;
};

}  // namespace harness
