// The pipeline's schedules as data (schemes/pipeline_schedule.h), without MPI or a model:
// every micro-batch forward then backward once, in order; what each stage holds; executed
// together they never deadlock and idle exactly (p - 1) / (m + p - 1) of a balanced step; and the
// cut that balances measured layer times.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "schemes/pipeline_schedule.h"

namespace harness {
namespace {

using Pass = PipelineOp::Pass;

TEST(PipelineSchedule, EveryMicroBatchRunsForwardThenBackwardOnceInOrder) {
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (int stages = 1; stages <= 5; ++stages) {
      for (int micro = 1; micro <= 9; ++micro) {
        for (int stage = 0; stage < stages; ++stage) {
          const std::vector<PipelineOp> ops = stage_schedule(schedule, stage, stages, micro);
          ASSERT_EQ(ops.size(), static_cast<std::size_t>(2 * micro));
          int next_forward = 0;
          int next_backward = 0;
          for (const PipelineOp& op : ops) {
            if (op.pass == Pass::kForward) {
              EXPECT_EQ(op.micro_batch, next_forward++);
            } else {
              EXPECT_EQ(op.micro_batch, next_backward++);
              EXPECT_LT(op.micro_batch, next_forward) << "a backward before its forward";
            }
          }
        }
      }
    }
  }
}

TEST(PipelineSchedule, GpipeHoldsEveryMicroBatchAndOneFOneBAtMostTheStagesLeft) {
  for (int stages = 1; stages <= 5; ++stages) {
    for (int micro = 1; micro <= 9; ++micro) {
      for (int stage = 0; stage < stages; ++stage) {
        EXPECT_EQ(most_held_micro_batches(stage_schedule("gpipe", stage, stages, micro)), micro);
        EXPECT_EQ(most_held_micro_batches(stage_schedule("1f1b", stage, stages, micro)),
                  std::min(stages - stage, micro));
      }
    }
  }
}

TEST(PipelineSchedule, OneFOneBOnTwoStagesOfFour) {
  const std::vector<PipelineOp> first = stage_schedule("1f1b", 0, 2, 4);
  const std::vector<PipelineOp> expected = {{Pass::kForward, 0},  {Pass::kForward, 1},  {Pass::kBackward, 0},
                                            {Pass::kForward, 2},  {Pass::kBackward, 1}, {Pass::kForward, 3},
                                            {Pass::kBackward, 2}, {Pass::kBackward, 3}};
  EXPECT_EQ(first, expected);
}

// With forward and backward of equal time on every stage and free transfers, both schedules take
// (m + p - 1) forward-and-backward times: a stage idles (p - 1) / (m + p - 1) of the step.
TEST(PipelineSchedule, ExecutedTogetherTheyIdleThePredictedBubble) {
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (int stages = 1; stages <= 6; ++stages) {
      for (int micro = 1; micro <= 12; ++micro) {
        const double step = simulated_step_time(schedule, stages, micro, 1.0, 1.0);
        EXPECT_DOUBLE_EQ(step, 2.0 * (micro + stages - 1)) << schedule << " p=" << stages << " m=" << micro;
        EXPECT_DOUBLE_EQ(1.0 - 2.0 * micro / step, predicted_bubble(stages, micro));
      }
    }
  }
}

TEST(PipelineSchedule, BalancedBoundariesMinimiseTheLargestStage) {
  EXPECT_EQ(balanced_boundaries({1, 1, 1, 1}, 2), std::vector<int>({2}));
  EXPECT_EQ(balanced_boundaries({1, 1, 1, 1}, 4), std::vector<int>({1, 2, 3}));
  EXPECT_EQ(balanced_boundaries({5, 1, 1, 1, 1, 1}, 2), std::vector<int>({1}));
  EXPECT_EQ(balanced_boundaries({1, 1, 1, 1, 1, 5}, 2), std::vector<int>({5}));
  EXPECT_EQ(balanced_boundaries({3}, 1), std::vector<int>());
  // Against every cut of 7 layers into 3 stages.
  const std::vector<double> times = {2, 7, 1, 8, 2, 8, 1};
  const auto largest = [&times](int a, int b) {
    const auto sum = [&times](int from, int to) { return std::accumulate(times.begin() + from, times.begin() + to, 0.0); };
    return std::max({sum(0, a), sum(a, b), sum(b, 7)});
  };
  double best = 1e9;
  for (int a = 1; a < 7; ++a) {
    for (int b = a + 1; b < 7; ++b) best = std::min(best, largest(a, b));
  }
  const std::vector<int> cut = balanced_boundaries(times, 3);
  ASSERT_EQ(cut.size(), 2U);
  EXPECT_DOUBLE_EQ(largest(cut[0], cut[1]), best);
}

}  // namespace
}  // namespace harness
