// The "gpu" column's arithmetic: which limit a device path has, the limit at one size, and the
// share of it a backend reached, never above 100%.
#include "harness/results/gpu_limits.h"

#include <gtest/gtest.h>

#include <limits>

#include "backends/registry.h"

namespace harness {
namespace {

// A size whose reductions took `median_us` (fastest `min_us`), with the GPU's probes.
MessageSizeMetrics size_of(double median_us, double min_us, double out_us, double back_us, double device_copy_us) {
  MessageSizeMetrics size;
  size.bytes = 64 << 20;
  size.time_us_median = median_us;
  size.time_us_min = min_us;
  size.time_us_max = median_us;
  size.device_to_host_probe_us = out_us;
  size.host_to_device_probe_us = back_us;
  size.device_copy_probe_us = device_copy_us;
  return size;
}

TEST(GpuLimits, EachExchangePathHasTheBoundOfTheWayItsBuffersTake) {
  EXPECT_EQ(gpu_bound("pinned host staging"), GpuBound::kHostDeviceCopies);
  EXPECT_EQ(gpu_bound("device pointers"), GpuBound::kDeviceMemory);
  EXPECT_EQ(gpu_bound("nccl"), GpuBound::kDeviceMemory);  // a backend on GPU memory only
  EXPECT_EQ(gpu_bound("host memory"), GpuBound::kNone);
  EXPECT_EQ(gpu_bound(kNoExchangePath), GpuBound::kNone);
  EXPECT_EQ(gpu_bound(""), GpuBound::kNone);  // records before exchange_path
  EXPECT_EQ(gpu_bound_name(GpuBound::kHostDeviceCopies), "host-device copies");
  EXPECT_EQ(gpu_bound_name(GpuBound::kDeviceMemory), "device memory");
  EXPECT_EQ(gpu_bound_name(GpuBound::kNone), "");
}

// Staging moves the buffer out and back; pipelined, the two ways overlap, so the slower one bounds.
TEST(GpuLimits, StagingIsBoundByTheSlowerWayBetweenGpuAndHost) {
  const GpuLimit limit = gpu_limit("pinned host staging", 0, size_of(10000, 9000, 1300, 1500, 50));
  EXPECT_EQ(limit.bound, GpuBound::kHostDeviceCopies);
  EXPECT_DOUBLE_EQ(limit.limit_us, 1500);
  EXPECT_FALSE(limit.backend_was_faster);
  EXPECT_DOUBLE_EQ(limit.fraction, 0.15);
  EXPECT_EQ(gpu_limit_cell(limit), "15");
  // The device traffic figure is no part of it.
  EXPECT_DOUBLE_EQ(gpu_limit("pinned host staging", 5, size_of(10000, 9000, 1300, 1500, 50)).limit_us, 1500);
}

// In device memory: the traffic per byte at the device copy's rate (2 bytes per byte), at least 2.
TEST(GpuLimits, DeviceMemoryIsBoundByTheBackendsTrafficAtTheDeviceCopysRate) {
  const MessageSizeMetrics size = size_of(500, 300, 1300, 1500, 40);
  const GpuLimit floor = gpu_limit("nccl", 0, size);  // no figure: read the buffer, write the sums
  EXPECT_EQ(floor.bound, GpuBound::kDeviceMemory);
  EXPECT_DOUBLE_EQ(floor.limit_us, 40);
  EXPECT_DOUBLE_EQ(floor.fraction, 0.08);
  EXPECT_DOUBLE_EQ(gpu_limit("device pointers", 1, size).limit_us, 40);  // below 2: 2
  // A two-shot allreduce over 2 ranks sharing a GPU, (3p - 1)/p = 2.5 bytes per byte per rank.
  const GpuLimit two_shot = gpu_limit("cuda_ipc", 2.5, size);
  EXPECT_DOUBLE_EQ(two_shot.limit_us, 50);
  EXPECT_DOUBLE_EQ(two_shot.fraction, 0.1);
  EXPECT_EQ(gpu_limit_cell(two_shot), "10");
}

// Where the backend's fastest reduction beat the probes' figure, that reduction is the limit: the
// fraction stays at or below 1, and the cell says so.
TEST(GpuLimits, NoFractionAboveOneWhenTheBackendBeatsTheProbes) {
  const GpuLimit limit = gpu_limit("pinned host staging", 0, size_of(1000, 800, 900, 700, 10));
  EXPECT_TRUE(limit.backend_was_faster);
  EXPECT_DOUBLE_EQ(limit.limit_us, 800);
  EXPECT_DOUBLE_EQ(limit.fraction, 0.8);
  EXPECT_EQ(gpu_limit_cell(limit), "80*");
  const GpuLimit steady = gpu_limit("nccl", 0, size_of(20, 20, 0, 0, 30));  // every reduction alike
  EXPECT_DOUBLE_EQ(steady.fraction, 1);
  EXPECT_EQ(gpu_limit_cell(steady), "100*");
  for (const double median_us : {1e-3, 1.0, 7.0, 1e3, 1e6}) {
    for (const double probe_us : {1e-3, 1.0, 7.0, 1e3, 1e6}) {
      const GpuLimit any = gpu_limit("pinned host staging", 0, size_of(median_us, median_us / 2, probe_us, probe_us, probe_us));
      EXPECT_GT(any.fraction, 0);
      EXPECT_LE(any.fraction, 1) << median_us << " us against " << probe_us << " us";
    }
  }
}

TEST(GpuLimits, NoLimitWithoutTheFiguresItNeeds) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto none = [](const GpuLimit& limit) { return limit.bound == GpuBound::kNone && limit.fraction == 0; };
  EXPECT_TRUE(none(gpu_limit("host memory", 0, size_of(100, 90, 10, 10, 10))));
  EXPECT_TRUE(none(gpu_limit(kNoExchangePath, 0, size_of(100, 90, 10, 10, 10))));
  EXPECT_TRUE(none(gpu_limit("pinned host staging", 0, size_of(100, 90, 0, 0, 0))));  // device "cpu", older records
  EXPECT_TRUE(none(gpu_limit("pinned host staging", 0, size_of(100, 90, 10, 0, 10))));
  EXPECT_TRUE(none(gpu_limit("pinned host staging", 0, size_of(100, 90, nan, 10, 10))));
  EXPECT_TRUE(none(gpu_limit("nccl", 0, size_of(100, 90, 10, 10, 0))));
  EXPECT_TRUE(none(gpu_limit("nccl", 0, size_of(0, 0, 10, 10, 10))));
  EXPECT_EQ(gpu_limit_cell(GpuLimit{}), "-");
}

}  // namespace
}  // namespace harness
