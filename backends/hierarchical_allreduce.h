// `hier`: the hierarchical allreduce (what NCCL and MVAPICH2 do between GPUs of several nodes,
// Horovod's hierarchical allreduce), for CPU ranks: shared memory inside each node, a ring
// between nodes.
//
// With the node's ranks' data in NodeSharedMemory segments (allocate_buffer(), as `shm`), a
// reduction on several nodes is:
//   1. inside the node: the buffer is cut into m slices (m = the fewest ranks on any node), and
//      the node's ranks together add up every rank's segment, slice s going into the segment of
//      local rank s;
//   2. between nodes: local rank s reduces slice s with local rank s of every other node, in the
//      pipelined ring of ring_allreduce.h over its own communicator. All m local ranks use the
//      network at once, each for 1/m of the data, rather than one leader per node;
//   3. inside the node: every rank copies the finished slices of the others into its segment.
// Arrivals separate the phases. Every rank ends with the same bits: each node's partial sums are
// computed once, and the ring hands every rank the same finished chunks.
//
// On one node there is nothing to exchange and `hier` is `shm`, the same code. A node holding one
// rank makes m = 1: one ring between nodes, through local rank 0. Across nodes, buffers below a
// crossover (kHierMpiBelowBytes unless the setting hier_allreduce_below_bytes says otherwise),
// whose time is latency rather than bandwidth, go to MPI_Allreduce over all ranks (the crossover
// measured with experiments/multinode.json, see docs/backends-and-comm-benchmark.md, Across nodes).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "backends/gradient_sync.h"
#include "backends/node_shared_memory.h"

namespace harness {

constexpr std::size_t kHierMpiBelowBytes = 16 * 1024;

class HierarchicalAllreduce : public GradientSync {
 public:
  // Collective over `communicator`; each rank sums its parts inside the node with up to
  // `reduce_threads` threads (setting shm_reduce_threads; `levers`: the settings staging picks
  // how many by, staging_levers.h; by default all of them at every size). Throws CommError when
  // the shared memory cannot be created.
  explicit HierarchicalAllreduce(const Communicator& communicator, std::size_t mpi_below_bytes = kHierMpiBelowBytes,
                                 int reduce_threads = 1, std::optional<StagingLeverSettings> levers = std::nullopt);
  HierarchicalAllreduce(const HierarchicalAllreduce&) = delete;
  HierarchicalAllreduce& operator=(const HierarchicalAllreduce&) = delete;

  std::string_view name() const override { return "hier"; }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override { return memory_.allocate(count); }
  // As SharedMemoryAllreduce::allreduce_sum: the same span of allocate_buffer()'s memory on every
  // rank, or other memory of the same size on every rank.
  void allreduce_sum(std::span<float> buffer) override;

  int nodes() const { return nodes_; }
  // Slices exchanged between nodes in parallel: the fewest ranks on any node.
  int slices() const { return slices_; }
  std::size_t in_place_reductions() const { return memory_.in_place_reductions(); }
  int host_threads() const override { return memory_.reduce_threads(); }
  StagingLeverSettings staging_lever_settings() const override { return levers_; }
  void use_host_threads(int threads) override { memory_.use_reduce_threads(threads); }

 private:
  // Phases 1-3 on the node's segments (the class comment).
  void reduce_across_nodes(const std::vector<float*>& segments, std::size_t offset, std::size_t count);

  Communicator world_;
  OwnedComm node_handle_;           // before memory_, which is built on it and goes first
  OwnedComm between_nodes_handle_;  // local rank s of every node; null for s >= m
  std::size_t mpi_below_bytes_;
  int nodes_ = 1;
  int slices_ = 1;
  NodeSharedMemory memory_;
  std::vector<float> ring_scratch_;
  StagingLeverSettings levers_;
};

}  // namespace harness
