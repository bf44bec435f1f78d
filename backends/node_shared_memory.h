// NodeSharedMemory: memory that every rank of one node maps, and the arrivals that order their
// accesses to it. The mechanism under `shm` (which reduces in it) and under `hier` (which reduces
// in it inside each node, and exchanges between nodes from it).
//
// A node's ranks each own one segment of every region that allocate() hands out (the trainer's
// fused gradient buffer comes from there), so a reduction can read every rank's data where that
// rank wrote it. Buffers that are not in such a region go through scratch segments, a chunk at a
// time (one copy in, one copy out). Arrivals spin on flags in the mapping, then yield the core
// (at once when there are more ranks than cores).
//
// Requirements: the communicator's ranks on one node (the caller checks), POSIX shared memory
// (/dev/shm) large enough for the regions plus 1 MiB of scratch per rank. A rank that dies leaves
// the others waiting until mpirun or the point's timeout stops them, as in any MPI collective.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/communicator.h"
#include "backends/reduction_threads.h"

namespace harness {

class SharedMapping;

class NodeSharedMemory {
 public:
  // Every rank's segment at the reduced span's offset: segments[r] is rank r's copy of the data.
  using SegmentReduction =
      std::function<void(const std::vector<float*>& segments, std::size_t offset, std::size_t count)>;

  // Collective over `node` (ranks of one node). `backend` names the user of the memory in errors;
  // sum() splits its arithmetic over `reduce_threads` threads of this rank (reduction_threads.h).
  // Throws CommError when the shared memory cannot be created.
  NodeSharedMemory(const Communicator& node, std::string_view backend, int reduce_threads = 1);
  ~NodeSharedMemory();
  NodeSharedMemory(const NodeSharedMemory&) = delete;
  NodeSharedMemory& operator=(const NodeSharedMemory&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Collective: this rank's segment of a new region of `count` floats (page-aligned, so no two
  // ranks' data share a cache line). The memory lives as long as the pointer or a copy of it.
  std::shared_ptr<float> allocate(std::size_t count);

  // Runs `reduction` over the segments holding `buffer` once every rank's data is in its segment:
  // in place when `buffer` lies in allocate()'s memory, otherwise through the scratch segments a
  // chunk at a time. Through scratch, `reduction` must leave the sum in this rank's segment and
  // end with an arrive_and_wait() after which nobody reads another rank's segment; in place, it
  // may leave sums in other ranks' segments if its caller keeps every rank from writing there
  // until they are read (shm's scattered sums). Throws CommError on every rank when the ranks
  // pass different spans.
  void reduce(std::span<float> buffer, const SegmentReduction& reduction);

  // Whether `buffer` lies in allocate()'s memory (reduce() then works in place).
  bool holds(std::span<const float> buffer) const { return region_holding(buffer) != nullptr; }
  // The whole mapping of allocate()'s region around `pointer`, every rank's segment; empty when
  // `pointer` is not in one. Page-aligned.
  std::span<std::byte> region_memory(const float* pointer) const;

  // Sets this rank's arrival flag and waits until every rank has set theirs as often.
  void arrive_and_wait();

  // sum_segments(segments, begin, end, targets), its range split over the reduction threads.
  void sum(const std::vector<float*>& segments, std::size_t begin, std::size_t end, std::span<float* const> targets);
  int reduce_threads() const { return threads_.size(); }
  // Sums the ranges that follow on at most `threads` of them (ReductionThreads::use).
  void use_reduce_threads(int threads) { threads_.use(threads); }

  // Reductions done in allocate()'s memory, without copies (the rest went through scratch).
  std::size_t in_place_reductions() const { return in_place_reductions_; }

 private:
  // The segments of one mapping, one per rank, each `count` floats.
  struct Region {
    std::weak_ptr<SharedMapping> mapping;  // the buffer's owners keep it alive, not this object
    uint64_t id = 0;                       // 1, 2, ... in allocation order, as on every rank
    std::vector<float*> segments;
    std::size_t count = 0;
    std::size_t bytes = 0;  // of the mapping: every rank's segment, from segments[0]
  };

  // The live region whose segment of this rank holds `buffer`, or null.
  const Region* region_holding(std::span<const float> buffer) const;

  // Word `word` of rank `rank`'s cache line in the control mapping: 0 counts its arrivals, 1-3
  // describe the reduction it is in (region id, offset, count).
  std::atomic_ref<uint64_t> flag_word(int rank, int word) const;
  // arrive_and_wait(), publishing what this rank reduces and checking that all ranks agree.
  void arrive_checking(uint64_t region_id, std::size_t offset, std::size_t count);

  Communicator communicator_;
  std::string backend_;
  int rank_ = 0;  // communicator_.rank(), used on every access to the mapping
  int size_ = 1;
  bool oversubscribed_ = false;             // more ranks than the node has cores
  std::shared_ptr<SharedMapping> control_;  // arrival flags, then the scratch segments
  std::vector<float*> scratch_;             // one per rank
  uint64_t arrivals_ = 0;
  uint64_t regions_allocated_ = 0;
  std::vector<Region> regions_;
  std::size_t in_place_reductions_ = 0;
  ReductionThreads threads_;
};

// Adds elements [begin, end) of every segment, in segment order (so the sum has the same bits
// whichever rank computes it), and writes the sum into each of `targets` (segments among them),
// block by block through a sum that stays in L1. Between two arrivals.
void sum_segments(const std::vector<float*>& segments, std::size_t begin, std::size_t end,
                  std::span<float* const> targets);

}  // namespace harness
