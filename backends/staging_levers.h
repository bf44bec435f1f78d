// Staging's two levers on the host (device_staging.h, docs/gpus.md#staging-pipelined): the threads
// with which each rank of shm and hier sums its slice (setting shm_reduce_threads) and shm's sums
// gathered from their owners' segments by the GPU's copy engine (shm_copy_engine_gathers). Each is
// a setting; left at "auto", its default, staging picks it by the size of the buffer it stages:
// both from kStagingLeversFromBytes up, neither below. Measured on an H200, 2 ranks sharing it
// (docs/gpus.md): with both, staged shm went from 5-6 to 10-13 GB/s at 64 MiB and gained at
// 16 MiB; at 4 MiB they were slower in every run. On host memory (device cpu) nothing is staged,
// and "auto" is one thread. Pure functions, in every build: tested where no GPU is.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace harness {

// The buffer size from which "auto" turns both levers on (16 MiB).
inline constexpr std::size_t kStagingLeversFromBytes = std::size_t{16} << 20;
// The reduction threads a rank starts for "auto" on a GPU, at most its threads_per_rank: on the
// H200 four threads a rank were as fast as eight at 64 MiB and faster at 16 MiB.
inline constexpr int kAutoReduceThreads = 4;

// A point's settings of the two levers: a value, or nullopt for "auto".
struct StagingLeverSettings {
  std::optional<int> reduce_threads;
  std::optional<bool> copy_engine_gathers;

  // Both set (a backend made directly, not from a point's settings).
  static StagingLeverSettings fixed(int reduce_threads, bool copy_engine_gathers) {
    return {reduce_threads, copy_engine_gathers};
  }
};

// What one staged buffer runs with.
struct StagingLevers {
  int reduce_threads = 1;
  bool copy_engine_gathers = false;
  friend bool operator==(const StagingLevers&, const StagingLevers&) = default;
};

// The reduction threads a rank of shm or hier starts for these settings: the number set, or for
// "auto" min(kAutoReduceThreads, threads_per_rank) where buffers are staged from a GPU
// (`staged`), 1 on host memory. `threads_per_rank`: the rank's cores; 0 where unknown (before
// launch, when the launcher resolves it), taken as kAutoReduceThreads.
int reduction_threads_started(const StagingLeverSettings& settings, bool staged, int threads_per_rank);

// Whether shm keeps its sums where they can be gathered (SharedMemoryAllreduce's scatter_sums):
// where buffers are staged from a GPU, when the setting is true or "auto".
bool copy_engine_may_gather(const StagingLeverSettings& settings, bool staged);

// The levers of a staged buffer of `bytes`, cut in chunks of `chunk_bytes`, for a backend with
// `threads` reduction threads that can gather (`can_gather`: GradientSync::scatters_sums). A set
// lever as set (the threads all of them; gathering for buffers of more than one chunk, as
// before "auto" existed); an "auto" one on from kStagingLeversFromBytes up, off below.
StagingLevers staging_levers(std::size_t bytes, std::size_t chunk_bytes, const StagingLeverSettings& settings,
                             int threads, bool can_gather);

// The same as a step function of the size, for the records: from each step's `from_bytes` up to
// the next step's, buffers ran with its levers. The first step is from 0; no two neighbours alike.
struct StagingLeverStep {
  std::size_t from_bytes = 0;
  StagingLevers levers;
  friend bool operator==(const StagingLeverStep&, const StagingLeverStep&) = default;
};
std::vector<StagingLeverStep> staging_lever_steps(std::size_t chunk_bytes, const StagingLeverSettings& settings,
                                                  int threads, bool can_gather);

}  // namespace harness
