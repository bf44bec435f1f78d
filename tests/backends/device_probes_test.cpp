// The GPU's copy probes (label gpu: skipped without a usable GPU): every copy takes a positive,
// finite time, so the bandwidths the comm benchmark derives from them are positive and finite.
#include "backends/device_probes.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/registry.h"
#include "harness/common/errors.h"

namespace harness {
namespace {

TEST(DeviceProbes, EveryCopyGivesAPositiveFiniteBandwidth) {
#ifndef HARNESS_WITH_CUDA
  EXPECT_THROW(DeviceCopyProbes(1024), NotSupported);
#endif
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  for (const std::size_t count : {std::size_t{1}, std::size_t{1000003}, std::size_t{16} << 20}) {
    DeviceCopyProbes probes(count);
    const double bytes = static_cast<double>(count * sizeof(float));
    // Twice: the first copies of a buffer may pay for mapping it.
    for (int round = 0; round < 2; ++round) {
      for (const double seconds : {probes.device_to_host_s(), probes.host_to_device_s(), probes.device_to_device_s()}) {
        EXPECT_GT(seconds, 0) << count << " floats";
        EXPECT_TRUE(std::isfinite(bytes / seconds)) << count << " floats, " << seconds << " s";
        EXPECT_GT(bytes / seconds, 0) << count << " floats";
      }
    }
  }
}

TEST(DeviceProbes, AnEmptyBufferIsRefused) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  EXPECT_THROW(DeviceCopyProbes(0), Error);
}

}  // namespace
}  // namespace harness
