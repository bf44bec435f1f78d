// `allreduce`: one MPI_Allreduce (in place, MPI_SUM) over the caller's fused buffer; the MPI
// library picks the algorithm (Open MPI's tuned component: recursive doubling, ring, ...).
#pragma once

#include <climits>
#include <cstddef>
#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

class MpiAllreduce : public GradientSync {
 public:
  explicit MpiAllreduce(const Communicator& communicator) : communicator_(communicator) {}
  std::string_view name() const override { return "allreduce"; }
  void allreduce_sum(std::span<float> buffer) override;

 private:
  Communicator communicator_;
};

// MPI counts are int: a buffer of more than INT_MAX elements is reduced in pieces. A piece is
// [offset, offset + count) of the buffer.
struct MpiPiece {
  std::size_t offset = 0;
  int count = 0;
};
// The pieces, in order, that cover `elements` elements with counts of at most `max_count` (a
// parameter so that tests need not allocate 8 GiB).
std::vector<MpiPiece> mpi_pieces(std::size_t elements, std::size_t max_count = INT_MAX);

// MPI_Allreduce (in place, MPI_SUM) of `buffer` over `communicator`, a piece at a time; `what`
// names the call in a CommError. Every rank must pass the same size and max_count.
void allreduce_sum_in_pieces(std::span<float> buffer, const Communicator& communicator, const char* what,
                             std::size_t max_count = INT_MAX);

}  // namespace harness
