// `ring`: the bandwidth-optimal ring allreduce (Patarasuk and Yuan 2009; what Baidu's
// tensorflow-allreduce and Horovod popularised), written over MPI point-to-point.
//
// The buffer is cut into p chunks (sizes differ by at most one element). In p-1 reduce-scatter
// steps each rank sends one chunk to its right neighbour and adds the chunk from its left one,
// so that rank r ends up owning the full sum of chunk (r+1) mod p; in p-1 allgather steps the
// finished chunks travel once more round the ring. Every rank sends 2(p-1)/p of the buffer in
// total, independent of p: the reason the ring scales.
//
// Pipelined, as NCCL's ring is: every chunk travels as pieces of at most kRingPieceBytes, each
// its own message. A rank adds a piece as soon as it has arrived, while later pieces are still
// in flight, and passes it on at once (the chunk it finishes in one step is the chunk it sends in
// the next). The piece size is measured: on one node (Open MPI's shared-memory transport copies
// inside the MPI call, so nothing moves while a rank adds) 128 KiB pieces made 64 MiB take 36 ms
// against 18 ms in one piece; 1 MiB pieces kept most of that, and between simulated nodes (TCP)
// they were the fastest of 128 KiB, 1 MiB and 16 MiB (docs/backends-and-comm-benchmark.md, "Backends").
//
// Small buffers go to MPI_Allreduce. The ring pays 2(p-1) message latencies whatever the size, and
// each step moves a chunk of 1/p of the buffer, so it is latency-bound until that chunk is large:
// the backend `ring` hands a buffer whose chunk is below kRingMpiBelowChunkBytes (the setting
// ring_allreduce_below_chunk_bytes, 0: never) to MPI_Allreduce, whose library picks a
// latency-optimal algorithm there (recursive doubling, Rabenseifner). A crossover in chunk bytes
// rather than buffer bytes moves with the ranks, so one value serves a sweep from 2 to 16 ranks.
// ring_allreduce_sum() itself (also hier's ring between nodes) always runs the ring.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

constexpr std::size_t kRingPieceBytes = 1024 * 1024;

// Measured with the comm benchmark (docs/backends-and-comm-benchmark.md, "The ring at many
// ranks"): at 16 ranks on 16 cores the ring reached 0.31x, 0.43x and 0.77x MPI_Allreduce's busbw
// at 1 KiB, 64 KiB and 1 MiB (chunks up to 64 KiB) and 1.17x at 16 MiB (1 MiB chunks); at 2 ranks
// it was within 6-8% of MPI_Allreduce from 16 KiB (in one run from 4 KiB) to 16 MiB (chunks of
// 8 KiB to 8 MiB) and ahead at 64 MiB, and 1.3-3x slower below that. 512 KiB per chunk sits
// between 16 ranks' two sides, and at 2 ranks (1 MiB) it only moves buffers where both are level.
constexpr std::size_t kRingMpiBelowChunkBytes = 512 * 1024;

// Whether backend `ring` hands a buffer of `bytes` over `ranks` ranks to MPI_Allreduce: its chunk
// (bytes / ranks) is below `mpi_below_chunk_bytes` (0: never).
bool ring_hands_to_mpi(std::size_t bytes, int ranks, std::size_t mpi_below_chunk_bytes);

// The ring allreduce of `buffer` over `communicator`'s ranks: replaces it on every rank with the
// elementwise sum (the same bits on every rank). `scratch` holds received pieces between calls.
// Collective; throws CommError when an MPI call fails.
void ring_allreduce_sum(std::span<float> buffer, const Communicator& communicator,
                        std::vector<float>& scratch);

class RingAllreduce : public GradientSync {
 public:
  explicit RingAllreduce(const Communicator& communicator,
                         std::size_t mpi_below_chunk_bytes = kRingMpiBelowChunkBytes)
      : communicator_(communicator), mpi_below_chunk_bytes_(mpi_below_chunk_bytes) {}
  std::string_view name() const override { return "ring"; }
  // The ring, or MPI_Allreduce below the crossover (the file comment).
  void allreduce_sum(std::span<float> buffer) override;

 private:
  Communicator communicator_;
  std::size_t mpi_below_chunk_bytes_;
  std::vector<float> scratch_;
};

}  // namespace harness
