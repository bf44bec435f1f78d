// The `shm` backend's own memory, on every rank under mpirun (1 to 4 ranks). Reductions of
// other memory are in gradient_sync_test.cpp with every backend.
#include "backends/shared_memory_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "harness/common/errors.h"
#include "tests/backends/in_place_spans.h"
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

}  // namespace
}  // namespace harness
