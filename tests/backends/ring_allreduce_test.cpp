// Backend `ring` on both sides of its crossover to MPI_Allreduce (ring_allreduce_below_chunk_bytes),
// on every rank under mpirun: tests/CMakeLists.txt runs it with 1 to 4 ranks, and with 16 ranks
// (oversubscribed on a small machine), where the default crossover lies at 8 MiB.
#include "backends/ring_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/registry.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// Multiples of 1/1024 in [-1, 1]: sums of up to 2^13 of them are exact in float, whatever the
// order of the additions, so that 16 ranks' sums compare within 1e-6 to MPI_Allreduce's (with
// arbitrary floats, a different order of 16 additions near a cancellation differs by more).
std::vector<float> ring_buffer(std::size_t count, int rank, int call) {
  std::vector<float> buffer(count);
  std::mt19937 engine(static_cast<unsigned>(77 + 1000 * call + rank));
  std::uniform_int_distribution<int> steps(-1024, 1024);
  for (auto& value : buffer) value = static_cast<float>(steps(engine)) / 1024.0F;
  return buffer;
}

// The element counts worth checking at a crossover of `chunk_bytes` per rank: the chunking edge
// cases, the crossover's own size and its neighbours, and a large odd size.
std::vector<std::size_t> counts_around(std::size_t chunk_bytes, int ranks) {
  const auto p = static_cast<std::size_t>(ranks);
  std::vector<std::size_t> counts = {0, 1, p - 1, p, p + 1, 1000003};
  const std::size_t crossover = chunk_bytes * p / sizeof(float);  // the first count the ring takes
  if (crossover > 1) counts.insert(counts.end(), {crossover - 1, crossover, crossover + 1});
  return counts;
}

void expect_equal_to_mpi_allreduce(GradientSync& ring, std::size_t count, int call) {
  const World world;
  const std::vector<float> local = ring_buffer(count, world.rank, call);
  std::vector<float> mpi_sum = local;
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, mpi_sum.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  std::vector<float> reduced = local;
  ring.allreduce_sum(reduced);
  int wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    wrong += std::abs(reduced[i] - mpi_sum[i]) <= 1e-6 * std::max(1.0F, std::abs(mpi_sum[i])) ? 0 : 1;
  }
  EXPECT_EQ(wrong, 0) << "of " << count << " elements differ from MPI_Allreduce (call " << call << ")";
  // Synchronous SGD needs the same bits on every rank, on either side of the crossover.
  std::vector<float> from_zero = reduced;
  MPI_Bcast(from_zero.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(std::memcmp(from_zero.data(), reduced.data(), count * sizeof(float)), 0)
      << "ranks disagree on the sum of " << count << " elements";
}

TEST(RingAllreduce, EqualsMpiAllreduceOnBothSidesOfItsCrossoverTwiceInARow) {
  const World world;
  // 0: the ring at every size; the default; 64 bytes: a crossover at 16p elements.
  for (const std::size_t chunk_bytes : {std::size_t{0}, kRingMpiBelowChunkBytes, std::size_t{64}}) {
    RingAllreduce ring(MPI_COMM_WORLD, chunk_bytes);
    for (const std::size_t count : counts_around(chunk_bytes, world.size)) {
      SCOPED_TRACE(testing::Message() << "ring_allreduce_below_chunk_bytes " << chunk_bytes << ", " << count
                                      << " elements, " << world.size << " ranks");
      expect_equal_to_mpi_allreduce(ring, count, 1);
      expect_equal_to_mpi_allreduce(ring, count, 2);
    }
  }
}

TEST(RingAllreduce, TheCrossoverIsInBytesPerRank) {
  EXPECT_TRUE(ring_hands_to_mpi(8 * 1024 * 1024 - 4, 16, 512 * 1024));
  EXPECT_FALSE(ring_hands_to_mpi(8 * 1024 * 1024, 16, 512 * 1024));
  EXPECT_TRUE(ring_hands_to_mpi(1024 * 1024 - 4, 2, 512 * 1024));
  EXPECT_FALSE(ring_hands_to_mpi(1024 * 1024, 2, 512 * 1024));
  EXPECT_FALSE(ring_hands_to_mpi(4, 2, 0)) << "0: the ring at every size";
  EXPECT_FALSE(ring_hands_to_mpi(4, 1, 512 * 1024)) << "one rank has nothing to hand over";
  EXPECT_TRUE(ring_hands_to_mpi(SIZE_MAX, 2, SIZE_MAX)) << "a huge setting: MPI at every size";
}

// The setting reaches the backend through the table, and the table says where it hands over.
TEST(RingAllreduce, TheSettingReachesTheBackendAndTheTableSaysWhereItHandsOver) {
  const World world;
  BackendOptions options;
  options.ranks = world.size;
  const BackendInfo& ring = find_backend("ring");
  ASSERT_NE(ring.hands_to_mpi_below_bytes, nullptr);
  EXPECT_EQ(ring.hands_to_mpi_below_bytes(options), world.size > 1 ? kRingMpiBelowChunkBytes * world.size : 0);
  options.owned["ring_allreduce_below_chunk_bytes"] = 0;
  EXPECT_EQ(ring.hands_to_mpi_below_bytes(options), 0U);
  auto backend = make_gradient_sync("ring", options, MPI_COMM_WORLD);
  expect_equal_to_mpi_allreduce(*backend, 1000, 3);
}

}  // namespace
}  // namespace harness
