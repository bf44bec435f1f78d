#include "harness/rank/counting_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <malloc.h>

#include <atomic>

namespace harness {
namespace {

std::atomic<int64_t> g_in_use{0};
std::atomic<int64_t> g_peak{0};

// Allocates as LibTorch's default CPU allocator does (c10's alloc_cpu: aligned, large blocks
// advised for huge pages) and counts each block's usable size, which glibc tells again at free:
// the data pointer is all a raw deleter gets, and oneDNN's scratch memory is raw_allocate()d.
void free_counted(void* data) {
  g_in_use.fetch_sub(static_cast<int64_t>(malloc_usable_size(data)), std::memory_order_relaxed);
  c10::free_cpu(data);
}

class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    void* data = c10::alloc_cpu(bytes);
    const auto held = static_cast<int64_t>(malloc_usable_size(data));
    const int64_t now = g_in_use.fetch_add(held, std::memory_order_relaxed) + held;
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return {data, data, &free_counted, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_counted; }
};

}  // namespace

CpuAllocationCounter& CpuAllocationCounter::installed() {
  static CpuAllocationCounter counter = [] {
    // Never freed: tensors counted by it may outlive any scope. The highest priority keeps it in
    // place should anything register another CPU allocator later.
    static CountingAllocator* allocator = new CountingAllocator();
    c10::SetCPUAllocator(allocator, /*priority=*/UINT8_MAX);
    return CpuAllocationCounter();
  }();
  return counter;
}

int64_t CpuAllocationCounter::bytes_in_use() const { return g_in_use.load(std::memory_order_relaxed); }
int64_t CpuAllocationCounter::peak_bytes() const { return g_peak.load(std::memory_order_relaxed); }
void CpuAllocationCounter::reset_peak() { g_peak.store(g_in_use.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace harness
