// `shm`: an allreduce through memory that every rank of one node maps, with no copies and no
// messages. This is how intra-node collectives avoid the transport (Open MPI's coll/sm and
// coll/xhc, NCCL's shared-memory path): the floor a node's memory bandwidth sets.
//
// Each rank's gradients live in its segment of one shared mapping (allocate_buffer(); the
// trainer's fused gradient buffer comes from there). A reduction is: every rank arrives (its
// segment is written), rank r sums slice r of all p segments, in rank order, and writes the sum
// into all of them; every rank arrives again (all slices are written). Each rank reads and
// writes 2(p-1)/p of the buffer's size from other ranks' segments, as the ring sends, but with
// loads and stores instead of a transport's copies into and out of its buffers. Buffers that
// did not come from allocate_buffer() go through shared scratch segments in chunks (one copy in,
// one copy out).
//
// Requirements: all ranks on one node (checked: NotSupported otherwise), POSIX shared memory
// (/dev/shm) large enough for p times the buffer plus 1 MiB of scratch per rank. Arrivals spin
// on flags in the mapping, then yield the core (at once when there are more ranks than cores).
// A rank that dies leaves the others waiting until mpirun or the point's timeout stops them, as
// in any MPI collective.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

class SharedMapping;

class SharedMemoryAllreduce : public GradientSync {
 public:
  // Collective over `communicator`. Throws NotSupported when its ranks span several nodes and
  // CommError when the shared memory cannot be created.
  explicit SharedMemoryAllreduce(const Communicator& communicator);
  ~SharedMemoryAllreduce() override;
  SharedMemoryAllreduce(const SharedMemoryAllreduce&) = delete;
  SharedMemoryAllreduce& operator=(const SharedMemoryAllreduce&) = delete;

  std::string_view name() const override { return "shm"; }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override;
  // Every rank passes a span of allocate_buffer()'s memory at the same offset, or every rank
  // passes other memory of the same size; otherwise all ranks throw CommError.
  void allreduce_sum(std::span<float> buffer) override;

  // Reductions done in allocate_buffer()'s memory, without copies (the rest went through the
  // scratch segments).
  std::size_t in_place_reductions() const { return in_place_reductions_; }

 private:
  // The segments of one mapping, one per rank, each `count` floats.
  struct Region {
    std::weak_ptr<SharedMapping> mapping;  // the buffer's owners keep it alive, not the backend
    uint64_t id = 0;                       // 1, 2, ... in allocation order, as on every rank
    std::vector<float*> segments;
    std::size_t count = 0;
  };

  // Word `word` of rank `rank`'s cache line in the control mapping: 0 counts its arrivals, 1-3
  // describe the reduction it is in (region id, offset, count).
  std::atomic_ref<uint64_t> flag_word(int rank, int word) const;
  // Sets this rank's arrival flag and waits until every rank has set theirs as often.
  void arrive_and_wait();
  // arrive_and_wait(), publishing what this rank reduces and checking that all ranks agree.
  void arrive_checking(uint64_t region_id, std::size_t offset, std::size_t count);
  // Sums elements [offset, offset + count) of every segment into all of them; this rank does its
  // slice. Between two arrivals.
  void reduce_in_place(const std::vector<float*>& segments, std::size_t offset,
                       std::size_t count);

  Communicator communicator_;
  int rank_ = 0;   // communicator_.rank(), used on every access to the mapping
  int size_ = 1;
  bool oversubscribed_ = false;             // more ranks than the node has cores
  std::shared_ptr<SharedMapping> control_;  // arrival flags, then the scratch segments
  std::vector<float*> scratch_;             // one per rank
  uint64_t arrivals_ = 0;
  uint64_t regions_allocated_ = 0;
  std::vector<Region> regions_;
  std::size_t in_place_reductions_ = 0;
};

}  // namespace harness
