#include "backends/shared_memory_allreduce.h"

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

// A communicator of the ranks on one node, or NotSupported naming what to use instead.
const Communicator& on_one_node(const Communicator& communicator) {
  int smallest_node = node_place(communicator).local_size;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &smallest_node, 1, MPI_INT, MPI_MIN, communicator.handle()),
            "MPI_Allreduce");
  if (smallest_node != communicator.size()) {
    throw NotSupported(fmt::format(
        "backend \"shm\" needs every rank on one node (it reduces through shared memory), but "
        "some node holds only {} of the {} ranks; use hier (shared memory inside each node), "
        "allreduce, ring, ps or gloo across nodes",
        smallest_node, communicator.size()));
  }
  return communicator;
}

}  // namespace

SharedMemoryAllreduce::SharedMemoryAllreduce(const Communicator& communicator, int reduce_threads)
    : memory_(on_one_node(communicator), "shm", reduce_threads) {}

void sum_slice_into_every_segment(NodeSharedMemory& memory, const std::vector<float*>& segments,
                                  std::size_t offset, std::size_t count) {
  const std::size_t ranks = segments.size();
  const auto index = static_cast<std::size_t>(memory.rank());
  memory.sum(segments, offset + count * index / ranks, offset + count * (index + 1) / ranks, segments);
}

void SharedMemoryAllreduce::allreduce_sum(std::span<float> buffer) {
  if (memory_.size() == 1 || buffer.empty()) return;
  memory_.reduce(buffer, [this](const std::vector<float*>& segments, std::size_t offset,
                                std::size_t count) {
    sum_slice_into_every_segment(memory_, segments, offset, count);
    memory_.arrive_and_wait();  // every slice is summed: the segments may be read and reused
  });
}

}  // namespace harness
