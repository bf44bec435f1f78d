#include "harness/rank/marked_sync.h"

namespace harness {

MarkedSync::MarkedSync(std::unique_ptr<GradientSync> backend, RankProgressWriter& progress)
    : ForwardingSync(std::move(backend)), progress_(progress) {
  progress_.mark(RankStage::kOutsideBackend, calls_);
}

void MarkedSync::before_call() { progress_.mark(RankStage::kInBackend, calls_); }

// Not reached when the call throws: the mark stays where it failed.
void MarkedSync::after_call() { progress_.mark(RankStage::kOutsideBackend, ++calls_); }

}  // namespace harness
