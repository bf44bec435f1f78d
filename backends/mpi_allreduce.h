// `allreduce`: one MPI_Allreduce (in place, MPI_SUM) over the caller's fused buffer; the MPI
// library picks the algorithm (Open MPI's tuned component: recursive doubling, ring, ...).
#pragma once

#include "backends/gradient_sync.h"

namespace harness {

class MpiAllreduce : public GradientSync {
 public:
  explicit MpiAllreduce(const Communicator& communicator) : communicator_(communicator) {}
  std::string_view name() const override { return "allreduce"; }
  void allreduce_sum(std::span<float> buffer) override;

 private:
  Communicator communicator_;
};

}  // namespace harness
