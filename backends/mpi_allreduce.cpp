#include "backends/mpi_allreduce.h"

#include <algorithm>

namespace harness {

std::vector<MpiPiece> mpi_pieces(std::size_t elements, std::size_t max_count) {
  max_count = std::clamp<std::size_t>(max_count, 1, INT_MAX);
  std::vector<MpiPiece> pieces;
  for (std::size_t offset = 0; offset < elements; offset += max_count) {
    pieces.push_back({offset, static_cast<int>(std::min(max_count, elements - offset))});
  }
  return pieces;
}

void allreduce_sum_in_pieces(std::span<float> buffer, const Communicator& communicator, const char* what,
                             std::size_t max_count) {
  // The same pieces as mpi_pieces, without its vector: this runs inside the timed region of every
  // small reduction, where an allocation would be a measurable part of a microsecond.
  max_count = std::clamp<std::size_t>(max_count, 1, INT_MAX);
  for (std::size_t offset = 0; offset < buffer.size(); offset += max_count) {
    const int count = static_cast<int>(std::min(max_count, buffer.size() - offset));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data() + offset, count, MPI_FLOAT, MPI_SUM, communicator.handle()),
              what);
  }
}

void MpiAllreduce::allreduce_sum(std::span<float> buffer) {
  allreduce_sum_in_pieces(buffer, communicator_, "MPI_Allreduce");
}

}  // namespace harness
