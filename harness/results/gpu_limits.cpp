#include "harness/results/gpu_limits.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "backends/registry.h"  // kNoExchangePath

namespace harness {
namespace {

bool positive_finite(double value) { return value > 0 && std::isfinite(value); }

}  // namespace

GpuBound gpu_bound(std::string_view exchange_path) {
  if (exchange_path == "pinned host staging") return GpuBound::kHostDeviceCopies;
  if (exchange_path.empty() || exchange_path == "host memory" || exchange_path == kNoExchangePath) {
    return GpuBound::kNone;
  }
  return GpuBound::kDeviceMemory;  // "device pointers", or the name of a backend on GPU memory only
}

std::string_view gpu_bound_name(GpuBound bound) {
  switch (bound) {
    case GpuBound::kHostDeviceCopies:
      return "host-device copies";
    case GpuBound::kDeviceMemory:
      return "device memory";
    case GpuBound::kNone:
      break;
  }
  return "";
}

GpuLimit gpu_limit(std::string_view exchange_path, double device_memory_traffic, const MessageSizeMetrics& size) {
  GpuLimit limit;
  if (!positive_finite(size.time_us_median)) return limit;
  double probes_us = 0;
  switch (gpu_bound(exchange_path)) {
    case GpuBound::kHostDeviceCopies:
      if (!positive_finite(size.device_to_host_probe_us) || !positive_finite(size.host_to_device_probe_us)) {
        return limit;
      }
      probes_us = std::max(size.device_to_host_probe_us, size.host_to_device_probe_us);
      break;
    case GpuBound::kDeviceMemory:
      if (!positive_finite(size.device_copy_probe_us)) return limit;
      probes_us = std::max(2.0, device_memory_traffic) / 2.0 * size.device_copy_probe_us;
      break;
    case GpuBound::kNone:
      return limit;
  }
  limit.bound = gpu_bound(exchange_path);
  limit.backend_was_faster = positive_finite(size.time_us_min) && size.time_us_min < probes_us;
  limit.limit_us = limit.backend_was_faster ? size.time_us_min : probes_us;
  // A record's median is never below its fastest time; the cap holds whatever a record says.
  limit.fraction = std::min(1.0, limit.limit_us / size.time_us_median);
  return limit;
}

std::string gpu_limit_cell(const GpuLimit& limit) {
  if (limit.bound == GpuBound::kNone) return "-";
  return fmt::format("{:.0f}{}", 100 * limit.fraction, limit.backend_was_faster ? "*" : "");
}

}  // namespace harness
