// The `shm` backend's own memory, on every rank under mpirun (1 to 4 ranks). Reductions of
// other memory are in gradient_sync_test.cpp with every backend.
#include "backends/shared_memory_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <span>

namespace harness {
namespace {

struct World {
  int rank = 0;
  int size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

float value_on(int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 7)); }

TEST(SharedMemoryAllreduce, ReducesSpansOfItsMemoryInPlaceAndNothingElse) {
  const World world;
  SharedMemoryAllreduce backend(MPI_COMM_WORLD);
  // Large enough that every rank's slice spans many blocks, with an odd size per slice.
  constexpr std::size_t kCount = 300007;
  constexpr std::size_t kUntouched = 11;  // at either end: in no span
  constexpr std::size_t kSplit = 100003;  // two "buckets"
  const std::shared_ptr<float> memory = backend.allocate_buffer(kCount);
  ASSERT_NE(memory, nullptr);
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
  EXPECT_EQ(wrong, 0) << "of " << kCount << " elements";
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
}

}  // namespace
}  // namespace harness
