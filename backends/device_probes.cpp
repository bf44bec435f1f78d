#include "backends/device_probes.h"

#include <string>

#include <fmt/format.h>

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda_check.h"
#endif

namespace harness {

#ifdef HARNESS_WITH_CUDA

DeviceCopyProbes::DeviceCopyProbes(std::size_t count) : count_(count), source_(count), destination_(count) {
  if (count == 0) throw Error("DeviceCopyProbes: the buffers need at least one float");
  try {
    check_cuda_call(cudaMallocHost(reinterpret_cast<void**>(&pinned_), count * sizeof(float)), "cudaMallocHost");
    // Non-blocking: the probes' copies wait for nothing queued elsewhere, and time only themselves.
    check_cuda_call(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cuda_call(cudaEventCreate(&start_), "cudaEventCreate");
    check_cuda_call(cudaEventCreate(&stop_), "cudaEventCreate");
    // Defined contents, so that no copy reads memory nobody wrote: cleared on the probes' own
    // stream and finished before the first probe (a plain cudaMemset would go on the legacy
    // stream, which this non-blocking one does not wait for).
    check_cuda_call(cudaMemsetAsync(source_.data(), 0, count * sizeof(float), stream_), "cudaMemsetAsync");
    check_cuda_call(cudaMemsetAsync(destination_.data(), 0, count * sizeof(float), stream_), "cudaMemsetAsync");
    check_cuda_call(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(probe buffers cleared)");
  } catch (...) {
    release();  // the destructor does not run for an object whose constructor threw
    throw;
  }
}

DeviceCopyProbes::~DeviceCopyProbes() { release(); }

void DeviceCopyProbes::release() noexcept {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
  start_ = stop_ = nullptr;
  stream_ = nullptr;
  pinned_ = nullptr;
}

double DeviceCopyProbes::timed_copy_s(void* to, const void* from, int kind) {
  check_cuda_call(cudaEventRecord(start_, stream_), "cudaEventRecord(probe start)");
  check_cuda_call(cudaMemcpyAsync(to, from, count_ * sizeof(float), static_cast<cudaMemcpyKind>(kind), stream_),
             "cudaMemcpyAsync(probe)");
  check_cuda_call(cudaEventRecord(stop_, stream_), "cudaEventRecord(probe stop)");
  check_cuda_call(cudaEventSynchronize(stop_), "cudaEventSynchronize(probe stop)");
  float milliseconds = 0;
  check_cuda_call(cudaEventElapsedTime(&milliseconds, start_, stop_), "cudaEventElapsedTime");
  return milliseconds / 1e3;
}

double DeviceCopyProbes::device_to_host_s() {
  return timed_copy_s(pinned_, source_.data(), cudaMemcpyDeviceToHost);
}

double DeviceCopyProbes::host_to_device_s() {
  return timed_copy_s(destination_.data(), pinned_, cudaMemcpyHostToDevice);
}

double DeviceCopyProbes::device_to_device_s() {
  return timed_copy_s(destination_.data(), source_.data(), cudaMemcpyDeviceToDevice);
}

#else  // !HARNESS_WITH_CUDA

// DeviceBuffer's constructor already throws NotSupported in this build, saying why.
DeviceCopyProbes::DeviceCopyProbes(std::size_t count) : count_(count), source_(count), destination_(count) {}
DeviceCopyProbes::~DeviceCopyProbes() = default;
void DeviceCopyProbes::release() noexcept {}
double DeviceCopyProbes::timed_copy_s(void*, const void*, int) { return 0; }
double DeviceCopyProbes::device_to_host_s() { return 0; }
double DeviceCopyProbes::host_to_device_s() { return 0; }
double DeviceCopyProbes::device_to_device_s() { return 0; }

#endif  // HARNESS_WITH_CUDA

}  // namespace harness
