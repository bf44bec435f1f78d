// Counts the bytes LibTorch's CPU tensors hold, for the pipeline's peak activation memory: the
// allocator statistics that LibTorch keeps for CUDA (memory_stats) but not for the host. Installed,
// it replaces LibTorch's CPU allocator with one that allocates the same way (c10::alloc_cpu) and
// counts every block while it lives; blocks allocated before keep their own deleter and are not
// counted. Counts are glibc's usable sizes (each block's request rounded up to its chunk). A block
// that some library raw_allocate()d before installation and raw-frees after it (through this
// allocator's raw deleter) is subtracted without having been added: install it before anything
// runs (the pipeline does, before its first pass), or the count may start below the truth.
#pragma once

#include <cstdint>

namespace harness {

class CpuAllocationCounter {
 public:
  // The process's counter, wrapping LibTorch's CPU allocator on first use.
  static CpuAllocationCounter& installed();

  int64_t bytes_in_use() const;
  // The most bytes in use since the last reset_peak() (or since installation).
  int64_t peak_bytes() const;
  void reset_peak();
};

}  // namespace harness
