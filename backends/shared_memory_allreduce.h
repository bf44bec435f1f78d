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
// (/dev/shm) large enough for p times the buffer. Arrivals spin on flags in the mapping, then
// yield the core, so oversubscribed ranks still progress. A rank that dies leaves the others
// waiting until mpirun or the point's timeout stops them, as in any MPI collective.
#pragma once

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
  explicit SharedMemoryAllreduce(MPI_Comm communicator);
  ~SharedMemoryAllreduce() override;
  std::string_view name() const override { return "shm"; }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override;
  void allreduce_sum(std::span<float> buffer) override;

 private:
  // The segments of one mapping, one per rank, each `count` floats.
  struct Region {
    std::weak_ptr<SharedMapping> mapping;  // the buffer's owners keep it alive, not the backend
    std::vector<float*> segments;
    std::size_t count = 0;
  };

  // Sets this rank's arrival flag and waits until every rank has set theirs as often.
  void arrive_and_wait();
  // Sums elements [offset, offset + count) of every segment into all of them; this rank does its
  // slice. Between two arrivals.
  void reduce_in_place(const std::vector<float*>& segments, std::size_t offset,
                       std::size_t count);

  MPI_Comm communicator_;
  int rank_ = 0;
  int size_ = 1;
  std::shared_ptr<SharedMapping> control_;  // arrival flags, then the scratch segments
  std::vector<float*> scratch_;             // one per rank
  uint64_t arrivals_ = 0;
  std::vector<Region> regions_;
};

}  // namespace harness
