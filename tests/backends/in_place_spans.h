// Tests of a backend that reduces its own memory in place (shm, hier), on every rank.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <mpi.h>

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

// shm_reduce_threads: `several` (a backend with several reduction threads) must sum exactly as
// `one` (the same backend with one): each element adds the ranks in rank order whichever thread
// adds it. 1,000,003 floats, in the backends' own memory and in the caller's (through the scratch
// segments, a chunk at a time: compared with `one`'s chunks, as hier's ring between 3 nodes or more
// may round a chunk otherwise than the whole buffer), twice in a row. Returns the elements that
// differ from `one`'s bits or from the exact sum (MPI_Allreduce in double) beyond 1e-5.
inline int wrong_with_several_reduce_threads(GradientSync& one, GradientSync& several, const World& world) {
  constexpr std::size_t kCount = 1000003;
  std::vector<float> local(kCount);
  std::mt19937 engine(11 + world.rank);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  for (float& value : local) value = uniform(engine);
  std::vector<double> exact(local.begin(), local.end());
  MPI_Allreduce(MPI_IN_PLACE, exact.data(), static_cast<int>(kCount), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const std::shared_ptr<float> one_memory = one.allocate_buffer(kCount);
  const std::shared_ptr<float> several_memory = several.allocate_buffer(kCount);
  const auto wrong_in = [&](std::span<const float> sums, std::span<const float> reference) {
    int wrong = 0;
    for (std::size_t i = 0; i < kCount; ++i) {
      const bool same_bits = std::memcmp(&sums[i], &reference[i], sizeof(float)) == 0;
      wrong += same_bits && std::abs(sums[i] - exact[i]) <= 1e-5 ? 0 : 1;
    }
    return wrong;
  };
  int wrong = 0;
  for (int call = 0; call < 2; ++call) {
    const std::span<float> one_own(one_memory.get(), kCount);
    const std::span<float> several_own(several_memory.get(), kCount);
    std::copy(local.begin(), local.end(), one_own.begin());
    std::copy(local.begin(), local.end(), several_own.begin());
    std::vector<float> one_callers(local);
    std::vector<float> several_callers(local);
    one.allreduce_sum(one_own);
    several.allreduce_sum(several_own);
    one.allreduce_sum(one_callers);
    several.allreduce_sum(several_callers);
    wrong += wrong_in(several_own, one_own) + wrong_in(several_callers, one_callers);
  }
  return wrong;
}

// The smallest span wrong_after_two_spans_in_place reduces, in bytes.
inline constexpr std::size_t kSmallestInPlaceSpanBytes = (100003 - 11) * sizeof(float);

}  // namespace harness
