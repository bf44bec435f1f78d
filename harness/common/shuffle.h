// Seeded shuffles that give the same order on every rank, compiler and machine: std::mt19937_64
// is fully specified by the standard, and the Fisher-Yates step below avoids the
// implementation-defined std::uniform_int_distribution.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace harness {

// Shuffles `items` in place; `stream` separates independent uses of one seed (e.g. the epoch).
template <typename T>
void deterministic_shuffle(std::vector<T>& items, uint64_t seed, uint64_t stream) {
  std::mt19937_64 engine(seed * 0x9E3779B97F4A7C15ULL + stream);
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = engine() % i;  // the modulo bias is below 2^-40 for any real size
    std::swap(items[i - 1], items[j]);
  }
}

}  // namespace harness
