#include "harness/rank/partial_flush.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

#include "harness/common/rank_progress.h"
#include "harness/rank/step_records.h"

namespace harness {

FlushCadence::FlushCadence(double first_interval_s, double interval_s, double max_share)
    : first_interval_s_(first_interval_s), interval_s_(interval_s), max_share_(max_share) {}

std::size_t FlushCadence::next(std::size_t timed_steps, double elapsed_s, double flush_s) {
  const std::size_t steps = std::max<std::size_t>(timed_steps - previous_steps_, 1);
  const double step_s = elapsed_s / static_cast<double>(steps);
  const double doubled_s = std::ldexp(first_interval_s_, std::min(flushes_, 30));
  const double target_s = std::max(std::min(doubled_s, interval_s_), flush_s / max_share_);
  previous_steps_ = timed_steps;
  ++flushes_;
  // At least the next step; at most a bound no run reaches (a step time of 0 would mean never).
  constexpr double kMaxSteps = 1e12;
  const double more = step_s > 0 ? std::clamp(std::ceil(target_s / step_s), 1.0, kMaxSteps) : 1.0;
  return timed_steps + static_cast<std::size_t>(more);
}

PartialFlush::PartialFlush(const Communicator& communicator, std::vector<bool> training,
                           Writer write, FlushCadence cadence)
    : communicator_(communicator),
      training_(std::move(training)),
      write_(std::move(write)),
      cadence_(cadence) {}

double PartialFlush::flush(const LoopResult& so_far) {
  // Its gather, broadcast and barrier wait for every rank: one that hangs is named apart.
  const InHarnessCollective marked;
  const double started = MPI_Wtime();
  append_steps(steps_, gather_step_series(so_far.steps, gathered_, training_, communicator_));
  gathered_ = so_far.steps.step_s.size();
  uint64_t next = 0;
  if (communicator_.rank() == 0) {
    write_(so_far, steps_);
    // Wall time, evaluations included (it is wall time a limit counts). Before the first flush
    // there is no earlier end to count from, only the steps' own times.
    const double elapsed_s =
        flushes_ == 0 ? std::accumulate(so_far.steps.step_s.begin(), so_far.steps.step_s.end(), 0.0)
                      : started - previous_end_;
    next = cadence_.next(gathered_, elapsed_s, MPI_Wtime() - started);
  }
  check_mpi(MPI_Bcast(&next, 1, MPI_UINT64_T, 0, communicator_.handle()), "MPI_Bcast(next flush)");
  next_flush_step_ = static_cast<std::size_t>(next);
  ++flushes_;
  // The other ranks would otherwise start their next step while rank 0 writes, and wait for it
  // inside that step's reduction: the write would show up as communication time.
  check_mpi(MPI_Barrier(communicator_.handle()), "MPI_Barrier(flush)");
  previous_end_ = MPI_Wtime();
  return previous_end_ - started;
}

}  // namespace harness
