#include "harness/rank/stage_link.h"

#include <torch/cuda.h>

#include "harness/rank/counting_allocator.h"

#if defined(HARNESS_TORCH_HAS_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace harness {

StageLink::StageLink(const torch::Tensor& example, torch::Device device)
    : sizes_(example.sizes().vec()),
      strides_(example.is_non_overlapping_and_dense() ? example.strides().vec() : example.contiguous().strides().vec()),
      bytes_(example.numel() * static_cast<int64_t>(example.element_size())),
      device_(device) {}

torch::Tensor StageLink::host_buffer() const {
  return torch::empty_strided(sizes_, strides_,
                              torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(device_.is_cuda()));
}

torch::Tensor StageLink::to_host(const torch::Tensor& tensor) const {
  if (tensor.is_cpu() && tensor.sizes().vec() == sizes_ && tensor.strides().vec() == strides_) return tensor;
  torch::Tensor host = host_buffer();
  host.copy_(tensor);  // from a GPU: waits for the kernels that wrote `tensor`
  return host;
}

torch::Tensor StageLink::to_device(const torch::Tensor& host) const {
  return device_.is_cpu() ? host : host.to(device_, /*non_blocking=*/true);
}

StageMemory::StageMemory(torch::Device device) : device_(device) {
#if defined(HARNESS_TORCH_HAS_CUDA)
  measured_ = true;
#else
  measured_ = device.is_cpu();
#endif
  if (device.is_cpu()) CpuAllocationCounter::installed();  // before anything the steps allocate
}

#if defined(HARNESS_TORCH_HAS_CUDA)
namespace {
// The caching allocator's "all pools" statistics (StatType AGGREGATE, the first in every version).
auto device_stats(torch::Device device) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[0];
}
}  // namespace
#endif

int64_t StageMemory::in_use() const {
  if (device_.is_cpu()) return CpuAllocationCounter::installed().bytes_in_use();
#if defined(HARNESS_TORCH_HAS_CUDA)
  return device_stats(device_).current;
#else
  return 0;
#endif
}

void StageMemory::reset_peak() {
  if (device_.is_cpu()) {
    CpuAllocationCounter::installed().reset_peak();
    return;
  }
#if defined(HARNESS_TORCH_HAS_CUDA)
  c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
#endif
}

int64_t StageMemory::peak() const {
  if (device_.is_cpu()) return CpuAllocationCounter::installed().peak_bytes();
#if defined(HARNESS_TORCH_HAS_CUDA)
  return device_stats(device_).peak;
#else
  return 0;
#endif
}

void finish_queued_work(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace harness
