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
// The memory and the arrivals are NodeSharedMemory's (node_shared_memory.h, with its
// requirements). All ranks must be on one node (checked: NotSupported otherwise); `hier` is the
// backend for several nodes.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backends/gradient_sync.h"
#include "backends/node_shared_memory.h"

namespace harness {

class SharedMemoryAllreduce : public GradientSync {
 public:
  // Collective over `communicator`; each rank sums its slice with up to `reduce_threads` threads
  // (setting shm_reduce_threads). With `scatter_sums` (setting shm_copy_engine_gathers), a
  // reduction for staging (allreduce_sum_scattered) leaves each slice's sum in its owner's
  // segment alone. `levers`: the settings staging picks these by (staging_levers.h); by default
  // both as given, at every size. Throws NotSupported when its ranks span several nodes and
  // CommError when the shared memory cannot be created.
  explicit SharedMemoryAllreduce(const Communicator& communicator, int reduce_threads = 1, bool scatter_sums = false,
                                 std::optional<StagingLeverSettings> levers = std::nullopt);

  std::string_view name() const override { return "shm"; }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override { return memory_.allocate(count); }
  // Every rank passes a span of allocate_buffer()'s memory at the same offset, or every rank
  // passes other memory of the same size; otherwise all ranks throw CommError.
  void allreduce_sum(std::span<float> buffer) override;

  // Staging's shortcut (gradient_sync.h), with scatter_sums: rank r sums slice r of every
  // segment into its own segment only, and the pieces are the p slices in their owners'
  // segments. That saves writing p-1 copies of each sum, and the pass that reads them back,
  // where a GPU's copy engine gathers the pieces instead. Memory not from allocate_buffer() is
  // reduced as allreduce_sum does, in one piece.
  bool scatters_sums() const override { return scatter_sums_ && memory_.size() > 1; }
  std::span<std::byte> scattered_memory(const float* buffer) override;
  std::vector<std::span<const float>> allreduce_sum_scattered(std::span<float> buffer) override;
  void end_scattered() override;

  // Reductions done in allocate_buffer()'s memory, without copies (the rest went through the
  // scratch segments).
  std::size_t in_place_reductions() const { return memory_.in_place_reductions(); }
  int host_threads() const override { return memory_.reduce_threads(); }
  StagingLeverSettings staging_lever_settings() const override { return levers_; }
  void use_host_threads(int threads) override { memory_.use_reduce_threads(threads); }

 private:
  NodeSharedMemory memory_;
  bool scatter_sums_;
  StagingLeverSettings levers_;
};

// Sums elements [offset, offset + count) of every segment of `memory` into all of them; this
// rank does its slice, with memory's reduction threads. The sums are the same whichever rank
// computes them (ranks are added in rank order) and however many threads. Between two arrivals.
// Also `hier`'s reduction inside a node of one rank per slice.
void sum_slice_into_every_segment(NodeSharedMemory& memory, const std::vector<float*>& segments,
                                  std::size_t offset, std::size_t count);

}  // namespace harness
