#include "schemes/pipeline_schedule.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace harness {

std::vector<PipelineOp> stage_schedule(std::string_view schedule, int stage, int stages, int micro_batches) {
  using Pass = PipelineOp::Pass;
  std::vector<PipelineOp> ops;
  ops.reserve(static_cast<std::size_t>(2 * micro_batches));
  if (schedule == "gpipe") {
    for (int k = 0; k < micro_batches; ++k) ops.push_back({Pass::kForward, k});
    for (int k = 0; k < micro_batches; ++k) ops.push_back({Pass::kBackward, k});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int forwards = 0;
  int backwards = 0;
  while (forwards < warmup) ops.push_back({Pass::kForward, forwards++});
  while (forwards < micro_batches) {
    ops.push_back({Pass::kForward, forwards++});
    ops.push_back({Pass::kBackward, backwards++});
  }
  while (backwards < micro_batches) ops.push_back({Pass::kBackward, backwards++});
  return ops;
}

int most_held_micro_batches(const std::vector<PipelineOp>& ops) {
  int held = 0;
  int most = 0;
  for (const PipelineOp& op : ops) {
    held += op.pass == PipelineOp::Pass::kForward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

double predicted_bubble(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

double simulated_step_time(std::string_view schedule, int stages, int micro_batches, double forward,
                           double backward) {
  return simulated_step_time(schedule, std::vector<double>(static_cast<std::size_t>(stages), forward),
                             std::vector<double>(static_cast<std::size_t>(stages), backward), micro_batches);
}

double simulated_step_time(std::string_view schedule, const std::vector<double>& forward,
                           const std::vector<double>& backward, int micro_batches) {
  using Pass = PipelineOp::Pass;
  const int stages = static_cast<int>(forward.size());
  const auto index = [micro_batches](int stage, int k) {
    return static_cast<std::size_t>(stage) * static_cast<std::size_t>(micro_batches) + static_cast<std::size_t>(k);
  };
  constexpr double kNotYet = -1;
  std::vector<double> forward_done(static_cast<std::size_t>(stages * micro_batches), kNotYet);
  std::vector<double> backward_done(forward_done.size(), kNotYet);
  std::vector<std::vector<PipelineOp>> ops;
  for (int s = 0; s < stages; ++s) ops.push_back(stage_schedule(schedule, s, stages, micro_batches));
  std::vector<std::size_t> next(static_cast<std::size_t>(stages), 0);
  std::vector<double> clock(static_cast<std::size_t>(stages), 0);
  // Round after round, every stage runs its next pass if its input is there; a round where none can
  // is a deadlock of the schedules.
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      auto& position = next[static_cast<std::size_t>(s)];
      if (position == ops[static_cast<std::size_t>(s)].size()) continue;
      const PipelineOp op = ops[static_cast<std::size_t>(s)][position];
      double ready = 0;
      if (op.pass == Pass::kForward && s > 0) ready = forward_done[index(s - 1, op.micro_batch)];
      if (op.pass == Pass::kBackward) {
        ready = s + 1 < stages ? backward_done[index(s + 1, op.micro_batch)] : forward_done[index(s, op.micro_batch)];
      }
      if (ready == kNotYet) continue;
      double& now = clock[static_cast<std::size_t>(s)];
      now = std::max(now, ready) + (op.pass == Pass::kForward ? forward : backward)[static_cast<std::size_t>(s)];
      (op.pass == Pass::kForward ? forward_done : backward_done)[index(s, op.micro_batch)] = now;
      ++position;
      progressed = true;
    }
  }
  for (int s = 0; s < stages; ++s) {
    if (next[static_cast<std::size_t>(s)] != ops[static_cast<std::size_t>(s)].size()) {
      throw std::logic_error("pipeline schedules deadlock");
    }
  }
  return *std::max_element(clock.begin(), clock.end());
}

std::vector<int> balanced_boundaries(const std::vector<double>& layer_times, int stages) {
  const int layers = static_cast<int>(layer_times.size());
  std::vector<double> prefix(static_cast<std::size_t>(layers) + 1, 0);
  for (int l = 0; l < layers; ++l) prefix[l + 1] = prefix[l] + layer_times[l];
  constexpr double kInfinite = std::numeric_limits<double>::infinity();
  // best[s][l]: the least largest sum of the first l layers cut into s stages; cut[s][l]: the first
  // layer of the last of them.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(layers + 1, kInfinite));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(layers + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int l = s; l <= layers; ++l) {
      for (int first = s - 1; first < l; ++first) {
        const double largest = std::max(best[s - 1][first], prefix[l] - prefix[first]);
        if (largest < best[s][l]) {
          best[s][l] = largest;
          cut[s][l] = first;
        }
      }
    }
  }
  std::vector<int> boundaries(static_cast<std::size_t>(stages - 1));
  for (int s = stages, l = layers; s > 1; --s) {
    l = cut[s][l];
    boundaries[static_cast<std::size_t>(s - 2)] = l;
  }
  return boundaries;
}

}  // namespace harness
