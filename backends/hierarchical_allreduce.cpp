#include "backends/hierarchical_allreduce.h"

#include <algorithm>
#include <array>

#include "backends/mpi_allreduce.h"
#include "backends/ring_allreduce.h"
#include "backends/shared_memory_allreduce.h"

namespace harness {
namespace {

// Element range of part `part` of `parts` of [offset, offset + count).
struct Range {
  std::size_t begin;
  std::size_t end;
};
Range part_of(std::size_t offset, std::size_t count, int part, int parts) {
  const auto index = static_cast<std::size_t>(part);
  const auto total = static_cast<std::size_t>(parts);
  return {offset + count * index / total, offset + count * (index + 1) / total};
}

}  // namespace

HierarchicalAllreduce::HierarchicalAllreduce(const Communicator& communicator, std::size_t mpi_below_bytes,
                                             int reduce_threads, std::optional<StagingLeverSettings> levers)
    : world_(communicator),
      node_handle_(split_by_node(communicator)),
      mpi_below_bytes_(mpi_below_bytes),
      memory_(Communicator(node_handle_.get()), "hier", reduce_threads),
      levers_(levers.value_or(StagingLeverSettings::fixed(reduce_threads, false))) {
  const Communicator node(node_handle_.get());
  std::array<int, 2> counts = {node.rank() == 0 ? 1 : 0, -node.size()};  // nodes, -(fewest ranks)
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &counts[0], 1, MPI_INT, MPI_SUM, world_.handle()),
            "MPI_Allreduce(nodes)");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &counts[1], 1, MPI_INT, MPI_MAX, world_.handle()),
            "MPI_Allreduce(ranks per node)");
  nodes_ = counts[0];
  slices_ = -counts[1];
  const int color = node.rank() < slices_ ? node.rank() : MPI_UNDEFINED;
  check_mpi(MPI_Comm_split(world_.handle(), color, world_.rank(), between_nodes_handle_.target()),
            "MPI_Comm_split(between nodes)");
}

void HierarchicalAllreduce::allreduce_sum(std::span<float> buffer) {
  if (world_.size() == 1 || buffer.empty()) return;
  if (nodes_ == 1) {  // `shm`
    memory_.reduce(buffer, [this](const std::vector<float*>& segments, std::size_t offset,
                                  std::size_t count) {
      sum_slice_into_every_segment(memory_, segments, offset, count);
      memory_.arrive_and_wait();
    });
    return;
  }
  if (buffer.size_bytes() < mpi_below_bytes_) {
    // hier_allreduce_below_bytes may exceed 8 GiB: an int count would wrap.
    allreduce_sum_in_pieces(buffer, world_, "hier MPI_Allreduce");
    return;
  }
  memory_.reduce(buffer, [this](const std::vector<float*>& segments, std::size_t offset,
                                std::size_t count) { reduce_across_nodes(segments, offset, count); });
}

void HierarchicalAllreduce::reduce_across_nodes(const std::vector<float*>& segments,
                                                std::size_t offset, std::size_t count) {
  const int local_rank = memory_.rank();
  // 1. This rank's part of the node's sum, each element into the segment of its slice's owner.
  const Range work = part_of(offset, count, local_rank, memory_.size());
  for (int slice = 0; slice < slices_; ++slice) {
    const Range owned = part_of(offset, count, slice, slices_);
    const Range both = {std::max(work.begin, owned.begin), std::min(work.end, owned.end)};
    if (both.begin < both.end) {
      memory_.sum(segments, both.begin, both.end, std::span<float* const>(&segments[static_cast<std::size_t>(slice)], 1));
    }
  }
  memory_.arrive_and_wait();
  // 2. Slice `local_rank` with the same slice of every other node.
  float* mine = segments[static_cast<std::size_t>(local_rank)];
  if (between_nodes_handle_.get() != MPI_COMM_NULL) {
    const Range owned = part_of(offset, count, local_rank, slices_);
    ring_allreduce_sum(std::span<float>(mine + owned.begin, owned.end - owned.begin),
                       Communicator(between_nodes_handle_.get()), ring_scratch_);
  }
  memory_.arrive_and_wait();
  // 3. The other slices, finished, into this rank's segment.
  for (int slice = 0; slice < slices_; ++slice) {
    if (slice == local_rank) continue;
    const Range owned = part_of(offset, count, slice, slices_);
    std::copy(segments[static_cast<std::size_t>(slice)] + owned.begin,
              segments[static_cast<std::size_t>(slice)] + owned.end, mine + owned.begin);
  }
  memory_.arrive_and_wait();  // nobody reads another rank's segment any more
}

}  // namespace harness
