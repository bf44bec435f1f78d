// `ps`: the parameter server of the classic Go/MPI course project, with blocking point-to-point
// messages and no collectives. Rank 0 holds the master copy: it receives every other rank's
// buffer (MPI_Recv, in rank order), adds them to its own, and sends the sum back to each rank
// (MPI_Send). Rank 0 moves 2(p-1) buffers per step, so its link is the bottleneck as p grows,
// which is what the ring and the collectives avoid.
//
// Whether rank 0 also trains is the trainer's business (setting ps_server_trains): when it does
// not, it contributes a zero buffer and the trainer averages over the p-1 workers.
#pragma once

#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

class ParameterServer : public GradientSync {
 public:
  explicit ParameterServer(const Communicator& communicator);
  std::string_view name() const override { return "ps"; }
  void allreduce_sum(std::span<float> buffer) override;

 private:
  Communicator communicator_;
  std::vector<float> incoming_;  // on rank 0: one worker's buffer
};

}  // namespace harness
