#include "harness/rank/allocator.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <limits>

namespace harness {

// glibc serves blocks above its mmap threshold (128 KiB at first, raised dynamically) with
// fresh mmap()s, and trims the heap's top when much is free; training frees and reallocates the
// same activations every step, so each step paid again for zeroed pages: 600,000 page faults
// and 2 s of system time in a 64-step CNN epoch (`perf stat -e page-faults`), both in this
// harness and in PyTorch. A rank lives for one point, so holding its peak is harmless. Left
// alone when the user chose an allocator.
std::string keep_freed_memory() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if ((tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) ||
      std::getenv("LD_PRELOAD") != nullptr) {
    return "as configured by the environment (GLIBC_TUNABLES or LD_PRELOAD)";
  }
  constexpr int kLargestMmapThreshold = 32 * 1024 * 1024;  // glibc's maximum on 64-bit
  constexpr int kNeverTrim = std::numeric_limits<int>::max();
  const bool threshold_set = mallopt(M_MMAP_THRESHOLD, kLargestMmapThreshold) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, kNeverTrim) == 1;
  return std::string("glibc, mmap threshold ") + (threshold_set ? "32 MiB" : "default") +
         (trim_set ? ", no trimming" : ", default trimming");
}

}  // namespace harness
