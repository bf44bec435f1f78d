// The `hier` backend's own behaviour, on every rank under mpirun: on one host (1 to 4 ranks, where
// it must be `shm`) and on simulated nodes (2x2, 3x1, 2+1+1). Its sums of other memory at the
// standard sizes are in gradient_sync_test.cpp with every backend.
#include "backends/hierarchical_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <random>
#include <span>
#include <vector>

#include "backends/mpi_allreduce.h"
#include "backends/ring_allreduce.h"
#include "backends/shared_memory_allreduce.h"
#include "tests/backends/in_place_spans.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// The fewest ranks that any node (host name) holds.
int fewest_ranks_per_node() {
  const std::vector<std::string> hosts = all_host_names(Communicator(MPI_COMM_WORLD));
  std::map<std::string, int> ranks;
  for (const std::string& host : hosts) ++ranks[host];
  int fewest = static_cast<int>(hosts.size());
  for (const auto& [host, count] : ranks) fewest = std::min(fewest, count);
  return fewest;
}

bool same_bits_on_every_rank(std::span<const float> values) {
  std::vector<float> from_zero(values.begin(), values.end());
  MPI_Bcast(from_zero.data(), static_cast<int>(from_zero.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  int same = std::memcmp(from_zero.data(), values.data(), values.size_bytes()) == 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return same == 1;
}

// A node is the ranks of one host name, in rank order, the same on every rank (not MPI's
// shared-memory view: communicator.h says why).
TEST(HierarchicalAllreduce, NodesAreTheRanksOfEachHostNameInRankOrder) {
  const Communicator world(MPI_COMM_WORLD);
  const std::vector<std::string> hosts = all_host_names(world);
  const std::string& mine = hosts[static_cast<std::size_t>(world.rank())];
  std::vector<int> expected;
  for (int rank = 0; rank < world.size(); ++rank) {
    if (hosts[static_cast<std::size_t>(rank)] == mine) expected.push_back(rank);
  }
  const NodePlace place = node_place(world);
  EXPECT_EQ(place.local_size, static_cast<int>(expected.size()));
  EXPECT_EQ(expected[static_cast<std::size_t>(place.local_rank)], world.rank());
  const OwnedComm node_handle = split_by_node(world);
  const Communicator node(node_handle.get());
  std::vector<int> members(static_cast<std::size_t>(node.size()));
  const int me = world.rank();
  MPI_Allgather(&me, 1, MPI_INT, members.data(), 1, MPI_INT, node_handle.get());
  EXPECT_EQ(members, expected);
}

TEST(HierarchicalAllreduce, SeesTheNodesAndExchangesOneSlicePerRankOfTheSmallestNode) {
  const World world;
  HierarchicalAllreduce backend(MPI_COMM_WORLD);
  EXPECT_EQ(backend.nodes(), world.nodes);
  EXPECT_EQ(backend.slices(), fewest_ranks_per_node());
}

TEST(HierarchicalAllreduce, ReducesSpansOfItsMemoryInPlaceAndNothingElse) {
  const World world;
  HierarchicalAllreduce backend(MPI_COMM_WORLD);
  // Every span above the MPI_Allreduce crossover.
  static_assert(kSmallestInPlaceSpanBytes >= kHierMpiBelowBytes);
  EXPECT_EQ(wrong_after_two_spans_in_place(backend, world), 0) << "elements of 300007";
  EXPECT_EQ(backend.in_place_reductions(), world.size > 1 ? 2U : 0U);
}

// Inside each node, several reduction threads sum as one (on one node and on several).
TEST(HierarchicalAllreduce, SeveralReduceThreadsSumAsOne) {
  const World world;
  HierarchicalAllreduce one(MPI_COMM_WORLD);
  HierarchicalAllreduce three(MPI_COMM_WORLD, kHierMpiBelowBytes, 3);
  EXPECT_EQ(three.host_threads(), 3);
  EXPECT_EQ(wrong_with_several_reduce_threads(one, three, world), 0) << "elements of 1000003, twice";
}

// Around the MPI_Allreduce crossover and the ring's piece boundaries, in its own memory and in
// the caller's: the exact sum (float rounding aside), and the same bits on every rank.
TEST(HierarchicalAllreduce, SumsEverySizeAroundItsCrossoverAndPiecesToTheSameBits) {
  const World world;
  HierarchicalAllreduce backend(MPI_COMM_WORLD);
  const std::size_t crossover = kHierMpiBelowBytes / sizeof(float);
  const std::size_t piece = kRingPieceBytes / sizeof(float);
  const auto per_exchange = static_cast<std::size_t>(backend.slices() * backend.nodes());
  for (const std::size_t count : {crossover - 1, crossover, crossover + 1, piece * per_exchange - 1,
                                  piece * per_exchange + 1, 3 * piece * per_exchange + 5}) {
    std::vector<float> local(count);
    std::mt19937 engine(99 + world.rank);
    std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
    for (float& value : local) value = uniform(engine);
    std::vector<double> exact(count);
    for (std::size_t i = 0; i < count; ++i) exact[i] = local[i];
    MPI_Allreduce(MPI_IN_PLACE, exact.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    const std::shared_ptr<float> own_memory = backend.allocate_buffer(count);
    std::vector<float> callers(local);
    std::copy(local.begin(), local.end(), own_memory.get());
    backend.allreduce_sum(std::span<float>(own_memory.get(), count));
    backend.allreduce_sum(callers);
    for (const std::span<const float> sums : {std::span<const float>(own_memory.get(), count),
                                              std::span<const float>(callers)}) {
      int wrong = 0;
      for (std::size_t i = 0; i < count; ++i) wrong += std::abs(sums[i] - exact[i]) <= 1e-5 ? 0 : 1;
      EXPECT_EQ(wrong, 0) << "of " << count << " elements";
      EXPECT_TRUE(same_bits_on_every_rank(sums)) << count << " elements";
    }
  }
}

// hier's MPI path (buffers below hier_allreduce_below_bytes) reduces in pieces of at most INT_MAX
// elements, as `allreduce` does; with a limit of 3 every piece, the last short one too, is summed.
TEST(HierarchicalAllreduce, MpiPathSumsEveryPieceOfABufferAboveTheCountLimit) {
  const World world;
  std::vector<float> values(10);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((world.rank + 1) * (i + 1));
  allreduce_sum_in_pieces(values, Communicator(MPI_COMM_WORLD), "test MPI_Allreduce", 3);
  const float ranks_sum = static_cast<float>(world.size * (world.size + 1) / 2);
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], ranks_sum * (i + 1)) << "element " << i;
}

// On one node `hier` must be `shm`: the same sums, bit for bit.
TEST(HierarchicalAllreduce, OnOneNodeGivesShmsBits) {
  const World world;
  if (world.nodes > 1) GTEST_SKIP() << "several nodes: shm refuses";
  HierarchicalAllreduce hier(MPI_COMM_WORLD);
  SharedMemoryAllreduce shm(MPI_COMM_WORLD);
  constexpr std::size_t kCount = 100003;
  std::vector<float> local(kCount);
  std::mt19937 engine(7 + world.rank);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  for (float& value : local) value = uniform(engine);
  const std::shared_ptr<float> hier_memory = hier.allocate_buffer(kCount);
  const std::shared_ptr<float> shm_memory = shm.allocate_buffer(kCount);
  std::copy(local.begin(), local.end(), hier_memory.get());
  std::copy(local.begin(), local.end(), shm_memory.get());
  hier.allreduce_sum(std::span<float>(hier_memory.get(), kCount));
  shm.allreduce_sum(std::span<float>(shm_memory.get(), kCount));
  EXPECT_EQ(std::memcmp(hier_memory.get(), shm_memory.get(), kCount * sizeof(float)), 0);
}

}  // namespace
}  // namespace harness
