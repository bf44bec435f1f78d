// ReductionThreads: a rank's own threads for the arithmetic of a host-memory reduction, as
// oneCCL's worker threads (CCL_WORKER_COUNT) add up a CPU allreduce. One thread streams a large
// sum at one core's share of the memory bandwidth (about 22 GB/s of traffic on the H100 machine's
// host, where `shm` of 64 MiB over 2 ranks took 6.2 ms); a node's memory serves several cores at
// once. Used by `shm` and `hier` (setting shm_reduce_threads) and by the comm benchmark's memory
// probes, which must run as many threads as the backend they bound.
//
// The helpers (threads - 1 of them; the caller does one part itself) sleep on a futex
// (std::atomic::wait) between calls: idle, they take no core from training. Waking them costs
// microseconds, so a range is only split where each part has at least kMinFloatsPerThread floats.
//
// Not thread-safe: one caller at a time, as a GradientSync has (gradient_sync.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace harness {

class ReductionThreads {
 public:
  // Each part of a split range has at least this many floats (256 KiB): below that, waking a
  // helper costs more than the part's arithmetic saves.
  static constexpr std::size_t kMinFloatsPerThread = std::size_t{64} << 10;
  // Part boundaries fall on multiples of this many floats (one 64-byte cache line), so no two
  // threads write to one line.
  static constexpr std::size_t kAlignFloats = 16;

  // `threads` >= 1; 1 starts no thread and runs every range on the caller. Throws Error, with the
  // threads it started stopped, when the system refuses a thread (a limit on processes).
  explicit ReductionThreads(int threads);
  ~ReductionThreads();
  ReductionThreads(const ReductionThreads&) = delete;
  ReductionThreads& operator=(const ReductionThreads&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }
  // Splits the ranges that follow over at most `threads` of them (1 to size(); staging's levers
  // by buffer size use fewer for small buffers than the rank started). All of them until told.
  void use(int threads) { active_ = std::clamp(threads, 1, size()); }
  int in_use() const { return active_; }

  // Calls part(b, e) for consecutive pieces [b, e) that cover [begin, end) exactly, each on its
  // own thread (the caller's among them), and returns when all have returned. One piece, on the
  // caller, when the range is short or there is one thread: then nothing is allocated or woken, so
  // a backend's small reductions cost what they cost before. `part` must not throw.
  template <typename Part>
  void for_each_part(std::size_t begin, std::size_t end, const Part& part) {
    if (active_ <= 1 || end < begin + 2 * kMinFloatsPerThread) {
      part(begin, end);
      return;
    }
    split(begin, end, part);
  }

  // The pieces for_each_part cuts [begin, end) into with `threads` threads.
  static std::vector<std::pair<std::size_t, std::size_t>> parts(std::size_t begin, std::size_t end, int threads);

 private:
  static void cut(std::size_t begin, std::size_t end, int threads, std::vector<std::pair<std::size_t, std::size_t>>& pieces);
  void split(std::size_t begin, std::size_t end, const std::function<void(std::size_t, std::size_t)>& part);
  void helper_loop(std::size_t index);
  void stop_helpers() noexcept;  // wakes the helpers to return, and joins them

  std::vector<std::jthread> helpers_;
  // A call's work: helper i runs pieces_[i + 1] when generation_ moves on; pending_ counts the
  // helpers still at it.
  const std::function<void(std::size_t, std::size_t)>* part_ = nullptr;
  std::vector<std::pair<std::size_t, std::size_t>> pieces_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stopping_ = false;  // written before the last generation_ bump, read after it
  int active_ = 1;         // use()'s
};

}  // namespace harness
