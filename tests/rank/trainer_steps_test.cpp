// The trainer's steps: the update, warm-up, and the step records gathered from every rank.
#include "harness/rank/trainer.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>
#include <tuple>

#include "backends/registry.h"
#include "backends/gloo_allreduce.h"
#include "backends/mpi_allreduce.h"
#include "harness/common/errors.h"
#include "harness/rank/step_records.h"
#include "harness/results/statistics.h"
#include "harness/results/stragglers.h"
#include "harness/study/settings.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

// One sample per rank; sample p's loss is (p + 1) × sum(weight × pattern) + sum(bias), so the
// gradients are known: (p + 1) × pattern and ones. The weight is stored channels-last, as a
// convolution's in mnist_cnn, while the pattern is NCHW: a mix-up of the two layouts anywhere
// between autograd, the buckets and the update changes which element moves by how much.
class KnownGradients final : public Workload {
 public:
  explicit KnownGradients(int64_t samples) : samples_(samples) {}
  int64_t train_size() const override { return samples_; }
  int64_t test_size() const override { return 0; }
  std::vector<torch::Tensor> parameters() override { return {weight_, bias_}; }
  double forward_backward(std::span<const int64_t> positions) override {
    const auto loss = static_cast<double>(positions[0] + 1) * (weight_ * pattern()).sum() +
                      bias_.sum();
    loss.backward();
    return loss.item<double>();
  }
  Evaluation evaluate() override { return {}; }

  static torch::Tensor pattern() {
    return torch::arange(24, torch::kFloat32).reshape({2, 3, 2, 2});
  }
  torch::Tensor weight_ = torch::linspace(-1, 1, 24)
                              .reshape({2, 3, 2, 2})
                              .contiguous(torch::MemoryFormat::ChannelsLast)
                              .requires_grad_();
  torch::Tensor bias_ = torch::zeros({5}).requires_grad_();

 private:
  int64_t samples_;
};

TEST(DataParallelTrainer, OneStepSubtractsTheRateTimesTheAveragedGradientInTheParametersLayout) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const bool overlap : {false, true}) {
    KnownGradients workload(size);  // one step of one sample per rank
    const torch::Tensor initial_weight = workload.weight_.detach().clone();
    MpiAllreduce backend(MPI_COMM_WORLD);
    PointSettings settings;
    settings.ranks = size;
    settings.batch_size = 1;
    settings.epochs = 1;
    settings.lr = 0.125;
    settings.overlap = overlap;
    DataParallelTrainer trainer(workload, backend, MPI_COMM_WORLD, settings);
    trainer.train();
    // The mean over ranks of (p + 1) for p = 0 .. size - 1.
    const double mean_factor = (size + 1) / 2.0;
    const torch::Tensor expected = initial_weight - 0.125 * mean_factor * KnownGradients::pattern();
    EXPECT_TRUE(torch::allclose(workload.weight_, expected, 1e-6, 1e-6)) << "overlap=" << overlap;
    EXPECT_TRUE(torch::allclose(workload.bias_, torch::full({5}, -0.125F)))
        << "overlap=" << overlap;
    EXPECT_TRUE(workload.weight_.is_contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

// The update loop is taken only where parameter and gradient share a layout; otherwise sub_.
TEST(SgdUpdate, MatchesSubInEveryLayoutAndType) {
  const auto check = [](torch::Tensor parameter, torch::Tensor gradient) {
    const torch::Tensor expected = parameter - 0.25 * gradient;
    parameter.mutable_grad() = gradient;
    std::vector<torch::Tensor> parameters = {parameter};
    torch::NoGradGuard no_grad;
    const int64_t version = parameter._version();
    sgd_update(parameters, 0.25F);
    EXPECT_TRUE(torch::allclose(parameter, expected, 1e-6, 1e-6))
        << parameter.strides() << " " << gradient.strides() << " " << parameter.dtype();
    EXPECT_GT(parameter._version(), version);  // autograd sees the in-place change
  };
  const auto nchw = [] { return torch::randn({3, 4, 5, 6}); };
  const auto channels_last = [](torch::Tensor t) {
    return t.contiguous(torch::MemoryFormat::ChannelsLast);
  };
  check(nchw(), nchw());                                 // the loop
  check(channels_last(nchw()), channels_last(nchw()));   // the loop, channels-last
  check(channels_last(nchw()), nchw());                  // different layouts: sub_
  check(nchw(), channels_last(nchw()));
  check(nchw().to(torch::kFloat64), nchw().to(torch::kFloat64));  // not float32: sub_
  check(torch::randn({100000}), torch::randn({100000}));  // above the parallel grain size
}

// Iris, with rank 1 sleeping 50 ms in every forward and backward pass.
class OneSlowRank final : public Workload {
 public:
  explicit OneSlowRank(const PointSettings& settings)
      : iris_(make_workload(settings, kNoCudaDevice)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  }
  int64_t train_size() const override { return iris_->train_size(); }
  int64_t test_size() const override { return iris_->test_size(); }
  std::vector<torch::Tensor> parameters() override { return iris_->parameters(); }
  double forward_backward(std::span<const int64_t> positions) override {
    if (rank_ == 1) std::this_thread::sleep_for(kDelay);
    return iris_->forward_backward(positions);
  }
  Evaluation evaluate() override { return iris_->evaluate(); }

  static constexpr std::chrono::milliseconds kDelay{50};

 private:
  std::unique_ptr<Workload> iris_;
  int rank_ = 0;
};

TEST(DataParallelTrainer, LoadImbalanceShowsTheSlowRanksExtraCompute) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  PointSettings settings;
  settings.ranks = size;
  settings.batch_size = 4;
  settings.dataset_size = 24 * size;  // 6 steps
  settings.epochs = 1;
  OneSlowRank workload(settings);
  MpiAllreduce backend(MPI_COMM_WORLD);
  DataParallelTrainer trainer(workload, backend, MPI_COMM_WORLD, settings);
  const LoopResult result = trainer.train();
  const std::size_t steps = result.steps.compute_s.size();
  ASSERT_EQ(steps, 6U);
  const StepSeries series = gather_step_series(result.steps, std::vector<bool>(size, true), MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;  // the series is rank 0's
  ASSERT_TRUE(series.imbalance_s.has_value());
  const std::vector<double>& imbalance = *series.imbalance_s;
  ASSERT_EQ(imbalance.size(), steps);
  if (size == 1) {
    EXPECT_EQ(imbalance, std::vector<double>(steps, 0.0));  // nobody to wait for
    return;
  }
  // Sleeping takes at least the delay and the other ranks' 4-sample steps take microseconds, so
  // the slowest minus the mean is about delay × (1 - 1/p). Half of that leaves room for ranks
  // slowed down by sharing the cores (the median step, for the same reason).
  const double extra_s = std::chrono::duration<double>(OneSlowRank::kDelay).count();
  EXPECT_GE(median_of(imbalance), 0.5 * extra_s * (1.0 - 1.0 / size));
  for (const double wait : imbalance) EXPECT_LE(wait, 10 * extra_s);
}

// inject_compute_delay_ms makes its rank sleep in every step's compute: the gathered steps name
// it the slowest with a lead of about the delay, and the results flag it.
TEST(DataParallelTrainer, AnInjectedComputeDelayMakesItsRankTheStraggler) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  PointSettings settings;
  settings.ranks = size;
  settings.batch_size = 4;
  // 48 steps: the detector tests blocks of steps, and with 12 (3 blocks) a step or two in which
  // another rank of 4 on 2 busy cores came last left it short of significance (CI, once).
  settings.dataset_size = 4 * 48 * size;
  settings.epochs = 1;
  settings.inject_compute_delay_ms = 20;
  settings.inject_compute_delay_rank = std::min(2, size - 1);
  auto workload = make_workload(settings, kNoCudaDevice);
  MpiAllreduce backend(MPI_COMM_WORLD);
  DataParallelTrainer trainer(*workload, backend, MPI_COMM_WORLD, settings);
  const LoopResult result = trainer.train();
  const std::vector<bool> training(size, true);
  const StepSeries series = gather_step_series(result.steps, training, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == settings.inject_compute_delay_rank) {
    for (const double compute : result.steps.compute_s) EXPECT_GE(compute, 0.020);  // it slept
  }
  if (rank != 0) return;
  ASSERT_TRUE(series.slowest_rank.has_value());
  ASSERT_EQ(series.slowest_rank->size(), 48U);
  ASSERT_EQ(series.rank_compute->steps.size(), 48U);
  if (size == 1) return;  // slowest by nothing
  // The slowest in (nearly) every step: another rank may come last in a step it waited for a core.
  const auto times_slowest = std::count(series.slowest_rank->begin(), series.slowest_rank->end(),
                                        settings.inject_compute_delay_rank);
  EXPECT_GE(times_slowest, 44);
  // Its lead over the others' median is the delay (with two ranks too), less a quarter for ranks
  // slowed down by sharing the cores.
  EXPECT_GE(median_of(*series.slowest_lead_s), 0.75 * 0.020);
  // The step's mean wait is what the others waited for it: (size - 1) / size of the delay.
  EXPECT_GE(median_of(*series.wait_s), 0.75 * 0.020 * (size - 1) / size);
  Measurements measurements;
  measurements.world_size = size;
  measurements.hosts.assign(static_cast<std::size_t>(size), "here");
  measurements.train = TrainMeasurements{};
  measurements.train->training_ranks = size;
  measurements.train->steps = series;
  const Stragglers stragglers = find_stragglers({&measurements});
  EXPECT_EQ(stragglers.straggler.rank, settings.inject_compute_delay_rank);
  // The slowest in (nearly) each of 48 sampled steps, by far more than a tenth of a step: flagged,
  // with 2 ranks too. Not asserted where the ranks outnumber the cores: the others then wait for
  // cores together, in spells, their standings move together, the blocks of steps the detector
  // tests grow long and few, and in CI (3 ranks on 2 busy cores) a delayed rank that came second
  // in a few steps was once left unflagged. The end-to-end straggler test flags it on an idle
  // machine's cores.
  if (static_cast<unsigned>(size) > std::thread::hardware_concurrency()) return;
  EXPECT_EQ(stragglers.flagged, "rank") << describe_flag(stragglers) << " | "
                                        << describe_straggling(stragglers.straggler);
}

// Warm-up steps train (the parameters end where an untimed run ends) but are left out of the
// step records, the timed samples and the training time; samples seen still count them.
TEST(DataParallelTrainer, WarmupStepsTrainButAreNotTimed) {
  const auto run = [](int warmup_steps) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    PointSettings settings;
    settings.ranks = size;
    settings.batch_size = 2;
    settings.dataset_size = 96;
    settings.epochs = 2;
    settings.lr = 0.5;
    settings.warmup_steps = warmup_steps;
    auto workload = make_workload(settings, kNoCudaDevice);
    MpiAllreduce backend(MPI_COMM_WORLD);
    DataParallelTrainer trainer(*workload, backend, MPI_COMM_WORLD, settings);
    trainer.broadcast_parameters();
    LoopResult result = trainer.train();
    std::vector<float> flat;
    for (const auto& parameter : workload->parameters()) {
      flat.insert(flat.end(), parameter.data_ptr<float>(), parameter.data_ptr<float>() + parameter.numel());
    }
    return std::make_pair(result, flat);
  };
  const auto [timed, timed_parameters] = run(0);
  const auto [warm, warm_parameters] = run(3);
  EXPECT_EQ(warm_parameters, timed_parameters);
  const int64_t steps = timed.steps_per_epoch * 2;
  EXPECT_EQ(timed.steps.step_s.size(), static_cast<std::size_t>(steps));
  EXPECT_EQ(warm.steps.step_s.size(), static_cast<std::size_t>(steps - 3));
  const int64_t per_step = timed.samples_trained / steps;
  EXPECT_EQ(warm.samples_trained, timed.samples_trained - 3 * per_step);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    EXPECT_EQ(warm.epochs.back().samples_seen, timed.epochs.back().samples_seen);
  }
}

}  // namespace
}  // namespace harness
