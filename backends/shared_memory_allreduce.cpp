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

SharedMemoryAllreduce::SharedMemoryAllreduce(const Communicator& communicator, int reduce_threads, bool scatter_sums,
                                             std::optional<StagingLeverSettings> levers)
    : memory_(on_one_node(communicator), "shm", reduce_threads),
      scatter_sums_(scatter_sums),
      levers_(levers.value_or(StagingLeverSettings::fixed(reduce_threads, scatter_sums))) {}

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

std::span<std::byte> SharedMemoryAllreduce::scattered_memory(const float* buffer) {
  return scatters_sums() ? memory_.region_memory(buffer) : std::span<std::byte>();
}

std::vector<std::span<const float>> SharedMemoryAllreduce::allreduce_sum_scattered(std::span<float> buffer) {
  // holds() is the same on every rank when all pass the same span; when they do not, reduce()
  // throws on every rank as allreduce_sum does.
  if (!scatters_sums() || buffer.empty() || !memory_.holds(buffer)) {
    allreduce_sum(buffer);
    return {buffer};
  }
  std::vector<std::span<const float>> pieces;
  memory_.reduce(buffer, [this, &pieces](const std::vector<float*>& segments, std::size_t offset, std::size_t count) {
    const std::size_t ranks = segments.size();
    const auto mine = static_cast<std::size_t>(memory_.rank());
    float* const own_segment = segments[mine];
    memory_.sum(segments, offset + count * mine / ranks, offset + count * (mine + 1) / ranks,
                std::span<float* const>(&own_segment, 1));
    // Every slice is summed in its owner's segment; end_scattered()'s arrival keeps them there
    // until every rank has read them.
    memory_.arrive_and_wait();
    for (std::size_t owner = 0; owner < ranks; ++owner) {
      const std::size_t begin = count * owner / ranks;
      const std::size_t end = count * (owner + 1) / ranks;
      if (end > begin) pieces.emplace_back(segments[owner] + offset + begin, end - begin);
    }
  });
  return pieces;
}

void SharedMemoryAllreduce::end_scattered() {
  // Every rank arrives, whether or not its calls left pieces (all did or none did: the spans are
  // the same on every rank), so that the arrivals stay counted alike.
  if (scatters_sums()) memory_.arrive_and_wait();
}

}  // namespace harness
