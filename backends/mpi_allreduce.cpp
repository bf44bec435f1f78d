#include "backends/mpi_allreduce.h"

#include <algorithm>
#include <climits>

namespace harness {

void MpiAllreduce::allreduce_sum(std::span<float> buffer) {
  // MPI counts are int: reduce buffers above 2^31 - 1 elements in pieces.
  constexpr std::size_t kMaxCount = INT_MAX;
  for (std::size_t offset = 0; offset < buffer.size(); offset += kMaxCount) {
    const auto count = static_cast<int>(std::min(kMaxCount, buffer.size() - offset));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data() + offset, count, MPI_FLOAT, MPI_SUM,
                            communicator_.handle()),
              "MPI_Allreduce");
  }
}

}  // namespace harness
