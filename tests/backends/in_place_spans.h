// Tests of a backend that reduces its own memory in place (shm, hier), on every rank.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include <gtest/gtest.h>

#include "backends/gradient_sync.h"
#include "tests/mpi_world.h"

namespace harness {

// Fills the backend's memory, reduces two spans of it (two "buckets", 11 elements left out at
// either end) and counts the elements that are not the sum (inside the spans) or not untouched
// (outside them). Large enough that every rank's slice spans many blocks, with odd sizes.
inline int wrong_after_two_spans_in_place(GradientSync& backend, const World& world) {
  constexpr std::size_t kCount = 300007;
  constexpr std::size_t kUntouched = 11;
  constexpr std::size_t kSplit = 100003;
  const auto value_on = [](int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 7)); };
  const std::shared_ptr<float> memory = backend.allocate_buffer(kCount);
  EXPECT_NE(memory, nullptr);
  if (!memory) return -1;
  const std::span<float> buffer(memory.get(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) buffer[i] = value_on(world.rank, i);

  backend.allreduce_sum(buffer.subspan(kUntouched, kSplit - kUntouched));
  backend.allreduce_sum(buffer.subspan(kSplit, kCount - kSplit - kUntouched));

  const auto rank_sum = static_cast<float>(world.size * (world.size + 1) / 2);
  int wrong = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    const bool reduced = i >= kUntouched && i < kCount - kUntouched;
    const float expected = reduced ? rank_sum * static_cast<float>(i % 7) : value_on(world.rank, i);
    wrong += buffer[i] == expected ? 0 : 1;
  }
  return wrong;
}

// The smallest span wrong_after_two_spans_in_place reduces, in bytes.
inline constexpr std::size_t kSmallestInPlaceSpanBytes = (100003 - 11) * sizeof(float);

}  // namespace harness
