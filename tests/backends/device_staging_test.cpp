// The device path without a GPU checks what users meet (the reasons CUDA cannot run); with a
// GPU (a HARNESS_WITH_CUDA build on a CUDA machine) it checks the staging round trip.
#include "backends/device_staging.h"

#include <gtest/gtest.h>

#include <vector>

#include "harness/common/errors.h"

namespace harness {
namespace {

// Doubles the buffer: what allreduce_sum does on two ranks holding the same values.
class DoublingSync final : public GradientSync {
 public:
  std::string_view name() const override { return "doubling"; }
  void allreduce_sum(std::span<float> buffer) override {
    for (float& value : buffer) value *= 2;
  }
};

TEST(DeviceStaging, StatusExplainsWhyCudaCannotRun) {
  const CudaStatus status = cuda_status();
#ifdef HARNESS_WITH_CUDA
  if (status.usable) {
    EXPECT_GT(status.devices, 0);
    EXPECT_TRUE(status.reason.empty());
  } else {
    EXPECT_EQ(status.devices, 0);
    EXPECT_NE(status.reason.find("CUDA device"), std::string::npos) << status.reason;
  }
#else
  EXPECT_FALSE(status.usable);
  EXPECT_NE(status.reason.find("-DHARNESS_WITH_CUDA=ON"), std::string::npos) << status.reason;
  EXPECT_FALSE(mpi_accepts_device_pointers());
  EXPECT_THROW(DeviceBuffer(4), NotSupported);
#endif
}

// Records what reaches it, under the name of a backend that reduces GPU memory only.
class RecordingNcclSync final : public GradientSync {
 public:
  std::string_view name() const override { return "nccl"; }
  void allreduce_sum(std::span<float> buffer) override {
    seen_data = buffer.data();
    seen_count = buffer.size();
  }
  const float* seen_data = nullptr;
  std::size_t seen_count = 0;
};

// nccl gets the device address as it is, never a pinned host copy, whatever the MPI library; no
// GPU is needed to see that, since nothing is copied.
TEST(DeviceStaging, ABackendOnGpuMemoryGetsTheDevicePointerNeverAStagedCopy) {
  RecordingNcclSync nccl;
#ifdef HARNESS_WITH_CUDA
  DeviceStagedSync device_path(nccl);
  EXPECT_EQ(device_path.path(), "nccl");
  float* const device_address = reinterpret_cast<float*>(0x7f0000001000);  // never dereferenced
  device_path.allreduce_sum(device_address, 1000003);
  EXPECT_EQ(nccl.seen_data, device_address);
  EXPECT_EQ(nccl.seen_count, 1000003U);
#else
  EXPECT_THROW(DeviceStagedSync{nccl}, NotSupported);
#endif
}

TEST(DeviceStaging, PinnedStagingRoundTripsThroughTheHostBackend) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  DoublingSync host_backend;
  // Device pointers go only to a backend whose table entry accepts them; this one is not in the
  // table, so it must be staged.
  DeviceStagedSync staged(host_backend);
  EXPECT_EQ(staged.path(), "pinned host staging");
  for (const std::size_t count : {0UL, 1UL, 1000003UL}) {
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000) - 500.0F;
    DeviceBuffer device(count);
    device.copy_from_host(host);
    staged.allreduce_sum(device.data(), count);
    std::vector<float> result(count);
    device.copy_to_host(result);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(result[i], 2 * host[i]) << "element " << i;
  }
}

}  // namespace
}  // namespace harness
