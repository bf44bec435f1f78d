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
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

constexpr std::size_t kRingPieceBytes = 1024 * 1024;

// The ring allreduce of `buffer` over `communicator`'s ranks: replaces it on every rank with the
// elementwise sum (the same bits on every rank). `scratch` holds received pieces between calls.
// Collective; throws CommError when an MPI call fails.
void ring_allreduce_sum(std::span<float> buffer, const Communicator& communicator,
                        std::vector<float>& scratch);

class RingAllreduce : public GradientSync {
 public:
  explicit RingAllreduce(const Communicator& communicator) : communicator_(communicator) {}
  std::string_view name() const override { return "ring"; }
  void allreduce_sum(std::span<float> buffer) override {
    ring_allreduce_sum(buffer, communicator_, scratch_);
  }

 private:
  Communicator communicator_;
  std::vector<float> scratch_;
};

}  // namespace harness
