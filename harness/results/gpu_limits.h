// The comm table's "gpu" column: on device "cuda", each backend against the limit of the way its
// buffers take, as the "memory" column measures host backends against the node's memory. Pure
// arithmetic over the figures of a record.
#pragma once

#include <string>
#include <string_view>

#include "harness/results/record.h"

namespace harness {

enum class GpuBound {
  kNone,              // not on a GPU (host memory, one rank), or nothing known of the path
  kHostDeviceCopies,  // "pinned host staging": every byte goes to the host and back
  kDeviceMemory,      // the backend reduces in device memory ("device pointers", "nccl", ...)
};

// What bounds a point whose buffers reached its backend by `exchange_path` (the records'
// exchange_path): "pinned host staging" the link between GPU and host; "device pointers" or a
// backend's own name (a backend on GPU memory only) device memory; anything else nothing.
GpuBound gpu_bound(std::string_view exchange_path);

// "host-device copies", "device memory", "" for kNone.
std::string_view gpu_bound_name(GpuBound bound);

struct GpuLimit {
  GpuBound bound = GpuBound::kNone;
  double limit_us = 0;  // the fastest the size could be reduced (below)
  // The backend's own fastest reduction was faster than the probes' figure, and is the limit.
  bool backend_was_faster = false;
  double fraction = 0;  // limit_us / the backend's median time, in (0, 1]; 0 without a limit
};

// The limit of a reduction of `size` and the share of it the backend reached:
// - kHostDeviceCopies: the whole buffer goes out and comes back, each way at best at its probe's
//   rate; staging pipelined in chunks overlaps the two ways, so the slower way bounds it:
//   max(device_to_host_probe_us, host_to_device_probe_us). Staged in one piece (a buffer of one
//   chunk or less) the ways follow each other and take their sum: about half of this at most.
// - kDeviceMemory: the busiest rank's traffic through device memory per byte,
//   max(2, `device_memory_traffic`) (BackendInfo::device_memory_traffic, 0 when the backend
//   states none), at the rate of the device copy probe, which moves 2 bytes per byte:
//   traffic / 2 × device_copy_probe_us.
// The probes ran at other moments than the reductions, with noise of their own, so where the
// backend's fastest reduction (time_us_min) beat the probes' figure, that reduction is the limit
// instead: the fraction never exceeds 1. No limit (kNone, fraction 0) without a bound, without
// the probes' figures (device "cpu", records before them) or without a positive median time.
GpuLimit gpu_limit(std::string_view exchange_path, double device_memory_traffic, const MessageSizeMetrics& size);

// The console's cell: the percentage reached, with "*" where the backend's own fastest reduction
// is the limit ("100*" at most); "-" without a limit.
std::string gpu_limit_cell(const GpuLimit& limit);

}  // namespace harness
