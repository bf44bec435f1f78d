// How `allreduce` and `hier`'s MPI path cut a buffer into MPI calls: counts are int, so a buffer
// above INT_MAX elements takes several. The sums themselves are tested under mpirun
// (hierarchical_allreduce_test.cpp, gradient_sync_test.cpp).
#include "backends/mpi_allreduce.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace harness {
namespace {

// The pieces cover [0, elements) in order, without gaps or overlaps, none above max_count.
void expect_exact_cover(const std::vector<MpiPiece>& pieces, std::size_t elements, std::size_t max_count) {
  std::size_t next = 0;
  for (const MpiPiece& piece : pieces) {
    EXPECT_EQ(piece.offset, next);
    EXPECT_GT(piece.count, 0);
    EXPECT_LE(static_cast<std::size_t>(piece.count), max_count);
    next += static_cast<std::size_t>(piece.count);
  }
  EXPECT_EQ(next, elements);
}

TEST(MpiPieces, SmallLimitCutsTheBufferIntoFullPiecesAndARest) {
  const auto pieces = mpi_pieces(10, 3);
  ASSERT_EQ(pieces.size(), 4U);
  EXPECT_EQ(pieces.back().offset, 9U);
  EXPECT_EQ(pieces.back().count, 1);
  expect_exact_cover(pieces, 10, 3);
  expect_exact_cover(mpi_pieces(9, 3), 9, 3);
  EXPECT_EQ(mpi_pieces(9, 3).size(), 3U);
  EXPECT_TRUE(mpi_pieces(0, 3).empty());
  EXPECT_EQ(mpi_pieces(1, 3).size(), 1U);
}

// hier's small-buffer path once passed static_cast<int>(2^32 + 5) = 5 as the count and reduced
// 5 elements of 2^32 + 5 without an error.
TEST(MpiPieces, BufferAboveIntMaxElementsIsCoveredWhole) {
  constexpr std::size_t kElements = (std::size_t{1} << 32) + 5;
  const auto pieces = mpi_pieces(kElements);
  EXPECT_EQ(pieces.size(), 3U);
  expect_exact_cover(pieces, kElements, INT_MAX);
  EXPECT_EQ(mpi_pieces(INT_MAX).size(), 1U);
  EXPECT_EQ(mpi_pieces(std::size_t{INT_MAX} + 1).size(), 2U);
}

}  // namespace
}  // namespace harness
