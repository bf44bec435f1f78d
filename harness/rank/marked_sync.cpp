#include "harness/rank/marked_sync.h"

namespace harness {

MarkedSync::MarkedSync(std::unique_ptr<GradientSync> backend, RankProgressWriter& progress)
    : ForwardingSync(std::move(backend)), progress_(progress) {
  progress_.mark(RankStage::kOutsideBackend, calls_);
}

void MarkedSync::allreduce_sum(std::span<float> buffer) {
  progress_.mark(RankStage::kInBackend, calls_);
  backend().allreduce_sum(buffer);  // a throw leaves the mark where the call failed
  progress_.mark(RankStage::kOutsideBackend, ++calls_);
}

}  // namespace harness
