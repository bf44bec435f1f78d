// A rank's backend, marking each call in the rank's progress slot (rank_progress.h): inside the
// backend's call N, or outside it after call N. When a point hangs, the harness then says which
// ranks waited inside a collective and which never reached it.
//
// Contract: as the wrapped backend's (gradient_sync.h). Two marks per call, each three stores to
// a mapped page and a coarse clock read (8 ns here); calls come from one thread at a time, so the
// count is the rank's own.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/forwarding_sync.h"
#include "harness/common/rank_progress.h"

namespace harness {

class MarkedSync final : public ForwardingSync {
 public:
  MarkedSync(std::unique_ptr<GradientSync> backend, RankProgressWriter& progress);

 private:
  void before_call() override;
  void after_call() override;

  RankProgressWriter& progress_;
  int64_t calls_ = 0;  // calls that have returned
};

}  // namespace harness
