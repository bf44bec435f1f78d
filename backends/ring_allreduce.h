// `ring`: the bandwidth-optimal ring allreduce (Patarasuk and Yuan 2009; what Baidu's
// tensorflow-allreduce and Horovod popularised), written over MPI point-to-point.
//
// The buffer is cut into p chunks (sizes differ by at most one element). In p-1 reduce-scatter
// steps each rank sends one chunk to its right neighbour and adds the chunk from its left one,
// so that rank r ends up owning the full sum of chunk (r+1) mod p; in p-1 allgather steps the
// finished chunks travel once more round the ring. Every rank sends 2(p-1)/p of the buffer in
// total, independent of p: the reason the ring scales.
#pragma once

#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

class RingAllreduce : public GradientSync {
 public:
  explicit RingAllreduce(const Communicator& communicator);
  std::string_view name() const override { return "ring"; }
  void allreduce_sum(std::span<float> buffer) override;

 private:
  Communicator communicator_;
  std::vector<float> incoming_;  // one chunk received from the left neighbour
};

}  // namespace harness
