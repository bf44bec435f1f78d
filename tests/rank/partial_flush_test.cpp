// Partial measurements while a point runs: when flushes come, that every rank takes them at the
// same steps, that the series gathered in slices is the series gathered at the end, and that
// the loops leave the flushes' time out of their training time. Runs on every rank under mpirun
// (1 to 4 ranks); the cadence tests need no MPI and run on each rank alike.
#include "harness/rank/partial_flush.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>
#include <utility>

#include "backends/mpi_allreduce.h"
#include "harness/rank/comm_benchmark.h"
#include "harness/rank/step_records.h"
#include "harness/rank/trainer.h"
#include "tests/mpi_world.h"
#include "workloads/kmeans_driver.h"
#include "workloads/factories.h"
#include "workloads/registry.h"

namespace harness {
namespace {

TEST(FlushCadence, FirstAfterOneStepThenAfterASecondThenDoublingUpToTheInterval) {
  FlushCadence cadence;  // 1 s, then doubling up to 5 s
  EXPECT_EQ(FlushCadence::kFirstFlushStep, 1U);
  // The first flush knows only its one step: 10 ms, so 100 steps make a second.
  EXPECT_EQ(cadence.next(1, 0.010, 0.001), 101U);
  // Those 100 steps took 2 s of wall time (evaluation included): 20 ms a step, and 2 s next.
  EXPECT_EQ(cadence.next(101, 2.0, 0.001), 201U);
  EXPECT_EQ(cadence.next(201, 2.0, 0.001), 401U);  // 4 s
  EXPECT_EQ(cadence.next(401, 4.0, 0.001), 651U);  // 5 s, not 8
  EXPECT_EQ(cadence.next(651, 5.0, 0.001), 901U);
}

TEST(FlushCadence, IsAlwaysAtLeastOneStepLater) {
  FlushCadence slow;
  EXPECT_EQ(slow.next(1, 30.0, 0.001), 2U);  // a step longer than the interval
  FlushCadence instant;
  EXPECT_EQ(instant.next(7, 0.0, 0.0), 8U);  // no time measured: not "never"
}

TEST(FlushCadence, SpacesCostlyFlushesSoThatTheyTakeAtMostTheirShare) {
  FlushCadence cadence(1.0, 5.0, 0.02);
  cadence.next(1, 0.001, 0.0);
  // A 200 ms flush (a long series to write) waits 10 s, not 2: 2% of the wall time.
  EXPECT_EQ(cadence.next(1001, 1.0, 0.2), 1001U + 10'000U);
}

StepTimes known_steps(int rank, std::size_t steps) {
  StepTimes times;
  for (std::size_t s = 0; s < steps; ++s) {
    const double base = 0.001 * static_cast<double>((s * 7 + rank * 3) % 11 + 1);
    times.compute_s.push_back(base);
    times.comm_s.push_back(0.5 * base);
    times.exposed_s.push_back(0.25 * base);
    times.step_s.push_back(1.25 * base + 0.0001 * rank);
  }
  return times;
}

TEST(PartialFlush, SlicesGatheredOneAfterTheOtherAreTheSeriesGatheredAtOnce) {
  const World world;
  const std::vector<bool> training(world.size, true);
  const StepTimes local = known_steps(world.rank, 10);
  const StepSeries whole = gather_step_series(local, training, MPI_COMM_WORLD);
  StepSeries sliced;
  // Steps [first, end) at a time, an empty slice among them.
  using Slice = std::pair<std::size_t, std::size_t>;
  for (const auto& [first, end] : {Slice{0, 3}, Slice{3, 3}, Slice{3, 7}, Slice{7, 10}}) {
    StepTimes so_far = local;
    for (auto* series : {&so_far.compute_s, &so_far.comm_s, &so_far.exposed_s, &so_far.step_s}) {
      series->resize(end);
    }
    append_steps(sliced, gather_step_series(so_far, first, training, MPI_COMM_WORLD));
  }
  if (world.rank != 0) {
    EXPECT_TRUE(sliced.step_s.empty());
    return;
  }
  EXPECT_EQ(sliced.step_s, whole.step_s);
  EXPECT_EQ(sliced.compute_s, whole.compute_s);
  EXPECT_EQ(sliced.comm_s, whole.comm_s);
  EXPECT_EQ(sliced.exposed_comm_s, whole.exposed_comm_s);
  EXPECT_EQ(sliced.wait_s, whole.wait_s);
  EXPECT_EQ(sliced.imbalance_s, whole.imbalance_s);
}

// Records where the loop flushed, on this rank, and passes the flush on.
class RecordingFlush final : public LoopFlush {
 public:
  explicit RecordingFlush(LoopFlush& inner) : inner_(inner) {}
  bool due(std::size_t timed_steps) const override { return inner_.due(timed_steps); }
  double flush(const LoopResult& so_far) override {
    at_steps.push_back(static_cast<int64_t>(so_far.steps.step_s.size()));
    return inner_.flush(so_far);
  }
  std::vector<int64_t> at_steps;

 private:
  LoopFlush& inner_;
};

// Rank 0's copy of `values` (which may differ in length on other ranks).
std::vector<int64_t> rank_zeros(std::vector<int64_t> values) {
  auto count = static_cast<int64_t>(values.size());
  MPI_Bcast(&count, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  values.resize(static_cast<std::size_t>(count));
  MPI_Bcast(values.data(), static_cast<int>(count), MPI_INT64_T, 0, MPI_COMM_WORLD);
  return values;
}

TEST(PartialFlush, EveryRankFlushesAtTheSameStepsAndRankZeroWritesTheSeriesSoFar) {
  const World world;
  for (const bool overlap : {false, true}) {
    PointSettings settings;
    settings.ranks = world.size;
    settings.batch_size = 2;
    settings.epochs = 10;
    settings.overlap = overlap;
    settings.warmup_steps = 2;
    auto workload = make_workload(settings, kNoCudaDevice);
    MpiAllreduce backend(MPI_COMM_WORLD);
    DataParallelTrainer trainer(*workload, backend, MPI_COMM_WORLD, settings);
    const std::vector<bool> training(world.size, true);

    int writes = 0;
    StepSeries last_written;
    std::size_t last_epochs = 0;
    // Milliseconds instead of seconds, and no cap from the flush's cost: many flushes.
    PartialFlush partial(
        MPI_COMM_WORLD, training,
        [&](const LoopResult& so_far, const StepSeries& steps) {
          ++writes;
          EXPECT_EQ(steps.step_s.size(), so_far.steps.step_s.size());  // every step so far
          EXPECT_GE(so_far.epochs.size(), last_epochs);
          last_epochs = so_far.epochs.size();
          last_written = steps;
        },
        FlushCadence(0.002, 0.005, 1.0));
    RecordingFlush recording(partial);
    const LoopResult result = trainer.train(&recording);

    EXPECT_EQ(rank_zeros(recording.at_steps), recording.at_steps) << "overlap " << overlap;
    ASSERT_GE(recording.at_steps.size(), 2U) << "overlap " << overlap;
    EXPECT_EQ(recording.at_steps.front(), 1);  // after the first timed step, not in warm-up
    EXPECT_EQ(partial.flushes(), static_cast<int>(recording.at_steps.size()));
    EXPECT_GT(result.flush_time_s, 0.0);

    const StepSeries whole = gather_step_series(result.steps, training, MPI_COMM_WORLD);
    if (world.rank != 0) {
      EXPECT_EQ(writes, 0);
      continue;
    }
    EXPECT_EQ(writes, partial.flushes());
    const auto written = static_cast<std::ptrdiff_t>(last_written.step_s.size());
    ASSERT_EQ(written, recording.at_steps.back());
    ASSERT_LT(written, static_cast<std::ptrdiff_t>(whole.step_s.size()));
    // The same reduction of the same times: equal, not close.
    const auto is_prefix = [](const std::vector<double>& prefix, const std::vector<double>& whole) {
      return std::equal(prefix.begin(), prefix.end(), whole.begin());
    };
    EXPECT_TRUE(is_prefix(last_written.step_s, whole.step_s));
    EXPECT_TRUE(is_prefix(last_written.exposed_comm_s, whole.exposed_comm_s));
    EXPECT_TRUE(is_prefix(*last_written.wait_s, *whole.wait_s));
    EXPECT_TRUE(is_prefix(*last_written.imbalance_s, *whole.imbalance_s));
  }
}

// Flushes every step and sleeps in each, so that their time stands out.
class SleepingFlush final : public LoopFlush {
 public:
  bool due(std::size_t timed_steps) const override { return timed_steps >= 1; }
  double flush(const LoopResult& so_far) override {
    steps_seen.push_back(so_far.steps.step_s.size());
    // What it took, as a real flush says: a loaded machine oversleeps, and that is not training.
    const auto started = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(kSleep);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  static constexpr std::chrono::milliseconds kSleep{50};
  std::vector<std::size_t> steps_seen;
};

TEST(PartialFlush, TrainerLeavesTheFlushesOutOfTheTrainingTime) {
  const World world;
  PointSettings settings;
  settings.ranks = world.size;
  settings.batch_size = 4;
  settings.dataset_size = 24 * world.size;  // 6 steps an epoch
  settings.epochs = 2;
  auto workload = make_workload(settings, kNoCudaDevice);
  MpiAllreduce backend(MPI_COMM_WORLD);
  DataParallelTrainer trainer(*workload, backend, MPI_COMM_WORLD, settings);
  SleepingFlush flush;
  const LoopResult result = trainer.train(&flush);
  // Before every step but the first: 11 flushes, after 1 to 11 timed steps.
  ASSERT_EQ(flush.steps_seen.size(), 11U);
  EXPECT_EQ(flush.steps_seen.front(), 1U);
  EXPECT_EQ(flush.steps_seen.back(), 11U);
  EXPECT_GE(result.flush_time_s, 11 * 0.050);
  // 550 ms of sleeping; a dozen Iris steps take a few milliseconds even on shared cores.
  EXPECT_LT(result.train_time_s, 0.275);
  if (world.rank == 0) {
    ASSERT_EQ(result.epochs.size(), 2U);
    EXPECT_LT(result.epochs[1].train_time_s, 0.150);  // its 6 sleeps are not in its time
  }
}

TEST(PartialFlush, KMeansFlushesBetweenIterationsAndLeavesThemOutOfItsTime) {
  const World world;
  PointSettings settings;
  settings.workload = "kmeans";
  settings.ranks = world.size;
  settings.epochs = 50;
  const KMeansData data = load_kmeans_data(settings);
  MpiAllreduce backend(MPI_COMM_WORLD);
  SleepingFlush flush;
  const KMeansResult result =
      run_distributed_kmeans(data, backend, MPI_COMM_WORLD, settings, &flush);
  ASSERT_GE(result.iterations, 3);  // Iris from its seeded start: a few iterations
  // Before every iteration but the first, after 1, 2, ... iterations.
  std::vector<std::size_t> expected(static_cast<std::size_t>(result.iterations - 1));
  std::iota(expected.begin(), expected.end(), 1U);
  EXPECT_EQ(flush.steps_seen, expected);
  EXPECT_LT(result.training.train_time_s, 0.5 * (result.iterations - 1) * 0.050);
}

TEST(PartialFlush, CommBenchmarkReportsTheSizesSoFarAfterEachSize) {
  const World world;
  PointSettings settings;
  settings.kind = Kind::kComm;
  settings.ranks = world.size;
  apply_setting(settings, "comm_min_bytes", 4, "test");
  apply_setting(settings, "comm_max_bytes", 64, "test");
  apply_setting(settings, "comm_size_factor", 4, "test");
  apply_setting(settings, "comm_iterations", 2, "test");
  MpiAllreduce backend(MPI_COMM_WORLD);
  std::vector<std::size_t> reported;
  const auto report = [&](const std::vector<MessageSizeMetrics>& so_far) {
    reported.push_back(so_far.size());
    EXPECT_EQ(so_far.back().bytes, int64_t{4} << (2 * (so_far.size() - 1)));  // 4, 16, 64
  };
  const auto sizes = run_comm_benchmark(backend, MPI_COMM_WORLD, settings, report);
  ASSERT_EQ(sizes.size(), 3U);  // 4, 16, 64 bytes
  EXPECT_EQ(reported, (std::vector<std::size_t>{1, 2, 3}));
}

}  // namespace
}  // namespace harness
