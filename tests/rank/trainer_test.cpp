// Runs on every rank under mpirun (1 to 4 ranks).
#include "harness/rank/trainer.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>
#include <tuple>

#include "backends/registry.h"
#include "backends/gloo_allreduce.h"
#include "backends/mpi_allreduce.h"
#include "harness/common/errors.h"
#include "harness/results/metrics.h"
#include "harness/study/settings.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

constexpr int kBatch = 4;

std::vector<float> flat_parameters(Workload& workload) {
  std::vector<float> flat;
  for (const auto& parameter : workload.parameters()) {
    flat.insert(flat.end(), parameter.data_ptr<float>(),
                parameter.data_ptr<float>() + parameter.numel());
  }
  return flat;
}

// Rank 0's copy of `values`, for checking that every rank holds the same.
std::vector<float> rank_zeros(std::vector<float> values) {
  MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  return values;
}

struct Fixture {
  PointSettings settings;
  std::unique_ptr<Workload> workload;
  MpiAllreduce backend{MPI_COMM_WORLD};
  std::unique_ptr<DataParallelTrainer> trainer;
  int rank = 0;
  int size = 1;

  explicit Fixture(double bucket_mb = 25, bool overlap = false) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    settings.ranks = size;
    settings.batch_size = kBatch;
    settings.bucket_mb = bucket_mb;
    settings.overlap = overlap;
    workload = find_workload("iris_mlp").make(settings, kNoCudaDevice);
    trainer = std::make_unique<DataParallelTrainer>(*workload, backend, MPI_COMM_WORLD, settings);
  }

  std::vector<float> flat_gradients() {
    std::vector<float> flat;
    for (const auto& parameter : workload->parameters()) {
      const auto grad = parameter.grad().contiguous();
      flat.insert(flat.end(), grad.data_ptr<float>(), grad.data_ptr<float>() + grad.numel());
    }
    return flat;
  }

  void zero_gradients() {
    for (auto& parameter : workload->parameters()) parameter.mutable_grad().zero_();
  }
};

std::vector<int64_t> positions(int first, int count) {
  std::vector<int64_t> result(count);
  std::iota(result.begin(), result.end(), first);
  return result;
}

TEST(DataParallelTrainer, BroadcastGivesEveryRankRankZerosParameters) {
  Fixture f;
  {
    torch::NoGradGuard no_grad;
    for (auto& parameter : f.workload->parameters()) parameter.add_(f.rank);  // make ranks differ
  }
  f.trainer->broadcast_parameters();
  const std::vector<float> flat = flat_parameters(*f.workload);
  EXPECT_EQ(flat, rank_zeros(flat));
}

// Bucket sizes (MiB) and overlap: one bucket for the whole 3.3 KB model, or 1 KiB buckets
// (three of them), each with and without overlap.
using BucketsAndOverlap = std::tuple<double, bool>;

class GradientExchange : public ::testing::TestWithParam<BucketsAndOverlap> {};

TEST_P(GradientExchange, AveragedGradientIsTheMeanOfTheRanksGradients) {
  Fixture f(std::get<0>(GetParam()), std::get<1>(GetParam()));
  f.trainer->broadcast_parameters();
  // The local gradient, computed without any exchange.
  f.zero_gradients();
  f.workload->forward_backward(positions(f.rank * kBatch, kBatch));
  const std::vector<float> local = f.flat_gradients();
  const std::size_t count = local.size();
  // Every rank's local gradient, gathered before the exchange starts: while buckets are in
  // flight this thread may make no MPI call.
  std::vector<float> all(count * f.size);
  MPI_Allgather(local.data(), static_cast<int>(count), MPI_FLOAT, all.data(),
                static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
  // The same backward pass again, now with the exchange (hooks fire during it with overlap).
  f.zero_gradients();
  f.trainer->begin_step();
  f.workload->forward_backward(positions(f.rank * kBatch, kBatch));
  f.trainer->average_gradients();
  const std::vector<float> averaged = f.flat_gradients();
  const bool overlap = std::get<1>(GetParam());
  EXPECT_EQ(f.trainer->bucket_count(), std::get<0>(GetParam()) < 0.01 ? 3U : 1U);
  // With overlap, the hooks (not finish_step's fallback) must have launched the buckets.
  EXPECT_EQ(f.trainer->hook_launches(), overlap ? f.trainer->bucket_count() : 0U);

  int wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double mean = 0;
    for (int r = 0; r < f.size; ++r) mean += all[r * count + i];
    mean /= f.size;
    if (std::abs(averaged[i] - mean) > 1e-6 * std::max(1e-3, std::abs(mean))) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "of " << count << " gradient elements";

  // Equal-sized batches and a mean loss: the average is also the gradient of the union batch,
  // which one process computes here without any communication.
  f.zero_gradients();
  f.workload->forward_backward(positions(0, kBatch * f.size));
  const std::vector<float> full_batch = f.flat_gradients();
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_NEAR(averaged[i], full_batch[i], 1e-6 + 1e-5 * std::abs(full_batch[i])) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Buckets, GradientExchange,
                         ::testing::Combine(::testing::Values(25.0, 1.0 / 1024),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<BucketsAndOverlap>& info) {
                           return std::string(std::get<0>(info.param) < 0.01 ? "three_buckets"
                                                                              : "one_bucket") +
                                  (std::get<1>(info.param) ? "_overlap" : "_blocking");
                         });

TEST(DataParallelTrainer, ShortTrainingLowersTheLossAndKeepsRanksInStep) {
  Fixture f;
  f.settings.epochs = 15;
  f.settings.lr = 0.5;
  DataParallelTrainer trainer(*f.workload, f.backend, MPI_COMM_WORLD, f.settings);
  trainer.broadcast_parameters();
  const LoopResult result = trainer.train();
  EXPECT_EQ(result.steps_per_epoch, 120 / (kBatch * f.size));
  EXPECT_EQ(result.steps.step_s.size(), static_cast<std::size_t>(result.steps_per_epoch * 15));
  if (f.rank == 0) {
    ASSERT_EQ(result.epochs.size(), 15U);
    EXPECT_LT(result.epochs.back().train_loss, result.epochs.front().train_loss);
  }
  // Synchronous SGD: every rank holds the same parameters at the end.
  const std::vector<float> flat = flat_parameters(*f.workload);
  EXPECT_EQ(flat, rank_zeros(flat));
}

// A workload whose parameters() lists one tensor twice, as tied weights would.
class TiedWeights final : public Workload {
 public:
  int64_t train_size() const override { return 8; }
  int64_t test_size() const override { return 0; }
  std::vector<torch::Tensor> parameters() override { return {weight_, weight_}; }
  double forward_backward(std::span<const int64_t>) override { return 0; }
  Evaluation evaluate() override { return {}; }

 private:
  torch::Tensor weight_ = torch::zeros({3}).requires_grad_();
};

TEST(DataParallelTrainer, RefusesAParameterListedTwice) {
  TiedWeights workload;
  MpiAllreduce backend{MPI_COMM_WORLD};
  PointSettings settings;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  settings.ranks = size;
  EXPECT_THROW(DataParallelTrainer(workload, backend, MPI_COMM_WORLD, settings), NotSupported);
}

// Trains a fresh Iris MLP for at least 50 steps with `settings` and returns its parameters.
std::vector<float> trained_parameters(PointSettings settings) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  settings.ranks = size;
  settings.batch_size = kBatch;
  settings.lr = 0.5;
  const int workers = worker_layout(settings, 0, size).workers;
  const int steps_per_epoch = 120 / (kBatch * workers);
  settings.epochs = (50 + steps_per_epoch - 1) / steps_per_epoch;
  auto workload = find_workload("iris_mlp").make(settings, kNoCudaDevice);
  auto backend = make_gradient_sync(settings.backend, MPI_COMM_WORLD);
  DataParallelTrainer trainer(*workload, *backend, MPI_COMM_WORLD, settings);
  trainer.broadcast_parameters();
  trainer.train();
  return flat_parameters(*workload);
}

TEST(DataParallelTrainer, EveryBackendWithAndWithoutBucketsAndOverlapTrainsTheSameParameters) {
  PointSettings settings;
  settings.backend = "allreduce";
  const std::vector<float> reference = trained_parameters(settings);
  for (const auto& info : backend_table()) {
    if (info.name == "gloo" && !gloo_available()) continue;  // built without libgloo-dev
    for (const double bucket_mb : {25.0, 1.0 / 1024}) {
      for (const bool overlap : {false, true}) {
        settings.backend = std::string(info.name);
        apply_setting(settings, "ps_server_trains", true, "test");  // same workers, same batches: the same computation
        settings.bucket_mb = bucket_mb;
        settings.overlap = overlap;
        const std::vector<float> parameters = trained_parameters(settings);
        ASSERT_EQ(parameters.size(), reference.size());
        double worst = 0;
        for (std::size_t i = 0; i < parameters.size(); ++i) {
          worst = std::max(worst, std::abs(static_cast<double>(parameters[i]) - reference[i]) /
                                      std::max(1.0, std::abs(static_cast<double>(reference[i]))));
        }
        EXPECT_LE(worst, 1e-5) << info.name << " bucket_mb=" << bucket_mb
                               << " overlap=" << overlap;
      }
    }
  }
}

TEST(DataParallelTrainer, ParameterServerThatOnlyServesKeepsItsCopyInStep) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "a serving-only parameter server needs 2 ranks";
  PointSettings settings;
  settings.backend = "ps";
  apply_setting(settings, "ps_server_trains", false, "test");
  settings.overlap = true;  // rank 0 runs no backward, so no hook fires there
  settings.bucket_mb = 1.0 / 1024;
  const std::vector<float> parameters = trained_parameters(settings);
  EXPECT_EQ(parameters, rank_zeros(parameters));
  EXPECT_EQ(worker_layout(settings, 0, size).index, -1);
  EXPECT_EQ(worker_layout(settings, 1, size).workers, size - 1);
}

}  // namespace
}  // namespace harness

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
      : iris_(find_workload("iris_mlp").make(settings, kNoCudaDevice)) {
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
  std::vector<double> compute_s(steps * size);
  MPI_Allgather(result.steps.compute_s.data(), static_cast<int>(steps), MPI_DOUBLE,
                compute_s.data(), static_cast<int>(steps), MPI_DOUBLE, MPI_COMM_WORLD);
  const auto imbalance = load_imbalance_per_step(compute_s, steps, std::vector<bool>(size, true));
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
    auto workload = find_workload("iris_mlp").make(settings, kNoCudaDevice);
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
