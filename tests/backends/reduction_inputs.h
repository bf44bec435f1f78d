// The inputs of the backends' reduction tests under mpirun: sizes relative to the number of ranks
// (they catch slicing and chunking mistakes), and each rank's own random buffer; and what their
// results are checked against: MPI_Allreduce's sum, and rank 0's bits.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace harness {

// Element counts: a code of 0 or more is the count itself; codes below 0 mean p + code + 2:
// -3 → p-1, -2 → p, -1 → p+1.
inline std::size_t element_count(int code, int ranks) {
  return code >= 0 ? static_cast<std::size_t>(code) : static_cast<std::size_t>(ranks + code + 2);
}

// `count` floats in [-1, 1], different on every rank and round, the same on every run for a seed.
inline std::vector<float> random_buffer(std::size_t count, unsigned seed, int rank, int round = 0) {
  std::vector<float> buffer(count);
  std::mt19937 engine(seed + 101 * static_cast<unsigned>(rank) + static_cast<unsigned>(round));
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  for (auto& value : buffer) value = uniform(engine);
  return buffer;
}

// MPI_Allreduce's sum of every rank's `local` (collective).
inline std::vector<float> mpi_allreduce_sum(const std::vector<float>& local) {
  std::vector<float> sum = local;
  if (MPI_Allreduce(MPI_IN_PLACE, sum.data(), static_cast<int>(sum.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    throw std::runtime_error("MPI_Allreduce of the expected sum failed");
  }
  return sum;
}

// Elements further than 1e-6 (relative, above 1) from `expected`; a NaN is always off.
inline int elements_off(const std::vector<float>& reduced, const std::vector<float>& expected) {
  int wrong = 0;
  for (std::size_t i = 0; i < reduced.size(); ++i) {
    const double reference = expected[i];
    if (!(std::abs(reduced[i] - reference) <= 1e-6 * std::max(1.0, std::abs(reference)))) ++wrong;
  }
  return wrong;
}

// Whether every rank holds rank 0's bits (collective): synchronous SGD needs the same sum everywhere.
inline bool same_bits_as_rank_zero(const std::vector<float>& reduced) {
  std::vector<float> from_zero = reduced;
  if (MPI_Bcast(from_zero.data(), static_cast<int>(from_zero.size()), MPI_FLOAT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    throw std::runtime_error("MPI_Bcast of rank 0's sum failed");
  }
  return std::memcmp(from_zero.data(), reduced.data(), reduced.size() * sizeof(float)) == 0;
}

}  // namespace harness
