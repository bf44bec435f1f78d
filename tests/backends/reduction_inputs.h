// The inputs of the backends' reduction tests under mpirun: sizes relative to the number of ranks
// (they catch slicing and chunking mistakes), and each rank's own random buffer.
#pragma once

#include <cstddef>
#include <random>
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

}  // namespace harness
