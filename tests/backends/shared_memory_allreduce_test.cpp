// The `shm` backend's own memory, on every rank under mpirun (1 to 4 ranks). Reductions of
// other memory are in gradient_sync_test.cpp with every backend.
#include "backends/shared_memory_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend_options.h"
#include "harness/common/errors.h"
#include "tests/backends/in_place_spans.h"
#include "tests/backends/reduction_inputs.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

TEST(SharedMemoryAllreduce, ReducesSpansOfItsMemoryInPlaceAndNothingElse) {
  const World world;
  SharedMemoryAllreduce backend(MPI_COMM_WORLD);
  EXPECT_EQ(wrong_after_two_spans_in_place(backend, world), 0) << "elements of 300007";
  // In place, not through the scratch segments (which would give the same sums).
  EXPECT_EQ(backend.in_place_reductions(), world.size > 1 ? 2U : 0U);
}

TEST(SharedMemoryAllreduce, SeveralReduceThreadsSumAsOne) {
  const World world;
  SharedMemoryAllreduce one(MPI_COMM_WORLD);
  SharedMemoryAllreduce three(MPI_COMM_WORLD, 3);
  EXPECT_EQ(three.host_threads(), 3);
  EXPECT_EQ(one.host_threads(), 1);
  EXPECT_EQ(wrong_with_several_reduce_threads(one, three, world), 0) << "elements of 1000003, twice";
}

TEST(SharedMemoryAllreduce, ItsMemoryOutlivesTheBackend) {
  const World world;
  std::shared_ptr<float> memory;
  {
    SharedMemoryAllreduce backend(MPI_COMM_WORLD);
    memory = backend.allocate_buffer(1000);
  }
  // Still mapped: the trainer's .grad views may outlive the backend.
  for (int i = 0; i < 1000; ++i) memory.get()[i] = static_cast<float>(world.rank);
  EXPECT_EQ(memory.get()[999], static_cast<float>(world.rank));
  // To a new backend it is memory like any other (reduced through its scratch segments).
  SharedMemoryAllreduce backend(MPI_COMM_WORLD);
  backend.allreduce_sum(std::span<float>(memory.get(), 1000));
  const auto rank_sum = static_cast<float>(world.size * (world.size - 1) / 2);
  EXPECT_EQ(memory.get()[0], rank_sum);
  EXPECT_EQ(memory.get()[999], rank_sum);
  EXPECT_EQ(backend.in_place_reductions(), 0U);
}

// Ranks that reduce different spans would read each other's unrelated data, or wait at
// different arrivals: every rank must stop with the same error instead.
TEST(SharedMemoryAllreduce, RanksThatReduceDifferentSpansAllFail) {
  const World world;
  if (world.size == 1) GTEST_SKIP() << "needs two ranks";
  SharedMemoryAllreduce backend(MPI_COMM_WORLD);
  const std::shared_ptr<float> memory = backend.allocate_buffer(100);
  EXPECT_THROW(
      {
        try {
          backend.allreduce_sum(std::span<float>(memory.get() + world.rank, 10));
        } catch (const CommError& error) {
          EXPECT_NE(std::string(error.what()).find("ranks disagree"), std::string::npos)
              << error.what();
          throw;
        }
      },
      CommError);
  // Rank 0 in the shared memory, the others in their own.
  std::vector<float> own(10);
  const std::span<float> span =
      world.rank == 0 ? std::span<float>(memory.get(), 10) : std::span<float>(own);
  EXPECT_THROW(backend.allreduce_sum(span), CommError);
}

// Staging's shortcut (shm_copy_engine_gathers): each slice's sum stays in its owner's segment
// alone, and the pieces, read in order, are the sums: what a GPU's copy engine gathers. Sizes
// around the number of ranks, at an offset into the memory (staging reduces chunks of it), twice
// in a row with end_scattered() between.
TEST(SharedMemoryAllreduce, ScatteredSumsArePiecesInTheirOwnersSegments) {
  const World world;
  SharedMemoryAllreduce gathering(MPI_COMM_WORLD, 1, /*scatter_sums=*/true);
  EXPECT_EQ(gathering.scatters_sums(), world.size > 1) << "one rank has nothing to scatter";
  constexpr std::size_t kOffset = 5;
  for (const int code : {0, 1, -3, -2, -1, 1000003}) {
    const std::size_t count = element_count(code, world.size);
    const std::shared_ptr<float> memory = gathering.allocate_buffer(count + kOffset);
    const std::span<float> buffer(memory.get() + kOffset, count);
    if (gathering.scatters_sums()) {
      const std::span<std::byte> mapped = gathering.scattered_memory(buffer.data());
      EXPECT_GE(mapped.size(), static_cast<std::size_t>(world.size) * (count + kOffset) * sizeof(float));
      EXPECT_LE(mapped.data(), reinterpret_cast<std::byte*>(memory.get()));
      EXPECT_GE(mapped.data() + mapped.size(), reinterpret_cast<std::byte*>(buffer.data() + count));
    }
    for (int round = 0; round < 2; ++round) {
      const std::vector<float> local = random_buffer(count, 4321, world.rank, round);
      std::ranges::copy(local, buffer.begin());
      const std::vector<float> expected = mpi_allreduce_sum(local);
      const std::vector<std::span<const float>> pieces = gathering.allreduce_sum_scattered(buffer);
      std::vector<float> gathered;
      for (const std::span<const float> piece : pieces) gathered.insert(gathered.end(), piece.begin(), piece.end());
      ASSERT_EQ(gathered.size(), count) << count << " elements, round " << round + 1;
      EXPECT_EQ(elements_off(gathered, expected), 0) << count << " elements, round " << round + 1;
      EXPECT_TRUE(same_bits_as_rank_zero(gathered)) << count << " elements";
      if (world.size > 1 && count > 0) {
        EXPECT_EQ(pieces.size(), std::min<std::size_t>(count, world.size)) << "one piece per owner of a slice";
        // Not written into every segment: on the last rank, rank 0's slice holds its own data still.
        if (world.rank == world.size - 1 && count >= static_cast<std::size_t>(world.size)) {
          EXPECT_EQ(buffer[0], local[0]) << count << " elements";
        }
      }
      gathering.end_scattered();  // every rank has read the pieces: the next round may write
    }
  }
  // Memory that is not the backend's: reduced as allreduce_sum does, in one piece.
  std::vector<float> own = random_buffer(1001, 99, world.rank);
  const std::vector<float> expected = mpi_allreduce_sum(own);
  const auto pieces = gathering.allreduce_sum_scattered(own);
  ASSERT_EQ(pieces.size(), 1U);
  EXPECT_EQ(pieces[0].data(), own.data());
  EXPECT_EQ(elements_off(own, expected), 0);
  gathering.end_scattered();
}

// Without the setting, and on the CPU where nothing is staged, shm writes every sum into every
// segment; with it on device cuda the backend scatters, through the wrappers that add a delay.
TEST(SharedMemoryAllreduce, ScattersOnlyWhenStagingFromAGpuAsksIt) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  BackendOptions options;
  options.ranks = world.size;
  options.inject_comm_delay_us = 1;  // wrapped in InjectedDelay
  options.owned["shm_copy_engine_gathers"] = true;
  EXPECT_FALSE(make_gradient_sync("shm", options, communicator)->scatters_sums()) << "device cpu";
  options.device = "cuda";
  const auto gathering = make_gradient_sync("shm", options, communicator);
  EXPECT_EQ(gathering->scatters_sums(), world.size > 1);
  options.owned.erase("shm_copy_engine_gathers");  // "auto": staging gathers by size, so it may
  EXPECT_EQ(make_gradient_sync("shm", options, communicator)->scatters_sums(), world.size > 1);
  options.owned["shm_copy_engine_gathers"] = false;
  const auto plain = make_gradient_sync("shm", options, communicator);
  EXPECT_FALSE(plain->scatters_sums());
  if (world.size == 1) return;  // one rank's sync exchanges nothing and offers no memory
  const std::shared_ptr<float> memory = plain->allocate_buffer(64);
  EXPECT_TRUE(plain->scattered_memory(memory.get()).empty());
  std::vector<float> local(64, static_cast<float>(world.rank + 1));
  std::copy(local.begin(), local.end(), memory.get());
  const auto pieces = plain->allreduce_sum_scattered(std::span<float>(memory.get(), 64));
  ASSERT_EQ(pieces.size(), 1U) << "the whole buffer, every sum in it";
  EXPECT_EQ(pieces[0][63], static_cast<float>(world.size * (world.size + 1) / 2));
  plain->end_scattered();
}

}  // namespace
}  // namespace harness
