// A pipeline's schedule as data (DeepSpeed's runtime/pipe/schedule.py has the idea): the order in
// which one stage runs its micro-batches' forward and backward passes, without MPI or a model, so
// that a schedule is tested alone and the stage (pipeline.h) only executes it.
//
// GPipe (Huang et al. 2019): every micro-batch forward, then every one backward; a stage holds the
// activations of all m micro-batches at its peak. 1F1B (PipeDream-Flush, Narayanan et al. 2021;
// Megatron-LM's default): stage s of p runs min(p - s - 1, m) forward passes to fill the pipe,
// then alternates one forward and one backward, then drains the backward passes; it holds at most
// min(p - s, m) micro-batches. Both take (m + p - 1) forward-and-backward times of the slowest
// stage per step: the bubble, the share of a balanced stage's step spent idle, is (p - 1) / (m + p - 1).
#pragma once

#include <string_view>
#include <vector>

namespace harness {

struct PipelineOp {
  enum class Pass { kForward, kBackward };
  Pass pass = Pass::kForward;
  int micro_batch = 0;
  bool operator==(const PipelineOp&) const = default;
};

// Stage `stage`'s passes in a step of `micro_batches`, for schedule "gpipe" or "1f1b" (anything
// else: 1f1b). Forward passes run in micro-batch order, as do backward passes.
std::vector<PipelineOp> stage_schedule(std::string_view schedule, int stage, int stages, int micro_batches);

// The most micro-batches whose forward has run and backward has not, at any point of `ops`.
int most_held_micro_batches(const std::vector<PipelineOp>& ops);

// (p - 1) / (m + p - 1): the idle share of a balanced stage's step, with free transfers.
double predicted_bubble(int stages, int micro_batches);

// The step's length when stage s's forward pass of a micro-batch takes forward[s] and its backward
// backward[s], and messages are free: the stages' schedules executed together, each pass starting
// when its input is there (a forward after the previous stage's, a backward after the next
// stage's). Throws std::logic_error if the schedules deadlock.
double simulated_step_time(std::string_view schedule, const std::vector<double>& forward,
                           const std::vector<double>& backward, int micro_batches);
// The same with every stage's passes alike.
double simulated_step_time(std::string_view schedule, int stages, int micro_batches, double forward, double backward);

// The first layer of stages 1 to stages-1 that makes the stages' summed `layer_times` (consecutive
// layers, at least one per stage) as even as possible: the largest stage sum is the least it can be
// (ties: the earliest cut). Needs 1 <= stages <= layer_times.size().
std::vector<int> balanced_boundaries(const std::vector<double>& layer_times, int stages);

}  // namespace harness
