// How a rank's process allocates memory. Called once at the start of the rank program (and of
// the benchmarks, so that they measure what a rank sees).
#pragma once

#include <string>

namespace harness {

// Keeps freed memory in the process instead of handing it back to the kernel between steps.
// Left alone when the user chose an allocator (glibc.malloc tunables in GLIBC_TUNABLES, or
// LD_PRELOAD). Returns a
// description of what is in effect, for the point's record.
std::string keep_freed_memory();

}  // namespace harness
