// Runs on every rank under mpirun (1 to 4 ranks).
#include "harness/rank/trainer.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>
#include <tuple>

#include "backends/device_staging.h"
#include "backends/registry.h"
#include "backends/gloo_allreduce.h"
#include "backends/mpi_allreduce.h"
#include "harness/common/errors.h"
#include "harness/study/settings.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "workloads/workload.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

constexpr int kBatch = 4;

std::vector<float> flat_parameters(Workload& workload) {
  std::vector<float> flat;
  for (const auto& parameter : workload.parameters()) {
    const torch::Tensor host = parameter.detach().to(torch::kCPU).contiguous();  // the same tensor on the CPU
    flat.insert(flat.end(), host.data_ptr<float>(), host.data_ptr<float>() + host.numel());
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
    workload = make_workload(settings, kNoCudaDevice);
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

// A warm-up as long as the first epoch leaves no timed step: refused, not a record of nothing.
TEST(DataParallelTrainer, AWarmupAsLongAsTheFirstEpochIsRefused) {
  Fixture f;
  f.settings.warmup_steps = 120 / (kBatch * f.size);
  DataParallelTrainer trainer(*f.workload, f.backend, MPI_COMM_WORLD, f.settings);
  EXPECT_THROW(trainer.train(), ConfigError);
}

// The loss curve: windows of loss_every steps across epochs, each the mean over the ranks'
// batches; a window as long as an epoch is that epoch's loss; the last window may be short.
TEST(DataParallelTrainer, TheLossCurveAveragesWindowsOfStepsOverEveryRank) {
  Fixture f;
  f.settings.epochs = 4;
  f.settings.lr = 0.5;
  DataParallelTrainer epoch_windows(*f.workload, f.backend, MPI_COMM_WORLD, f.settings);
  const int64_t steps_per_epoch = epoch_windows.steps_per_epoch();
  f.settings.loss_every = static_cast<int>(steps_per_epoch);
  DataParallelTrainer trainer(*f.workload, f.backend, MPI_COMM_WORLD, f.settings);
  trainer.broadcast_parameters();
  const LoopResult result = trainer.train();
  const int64_t samples_per_step = kBatch * f.size;
  if (f.rank == 0) {
    ASSERT_EQ(result.loss_curve.size(), 4U);
    for (std::size_t e = 0; e < 4; ++e) {
      EXPECT_NEAR(result.loss_curve[e].train_loss, result.epochs[e].train_loss, 1e-9);
      EXPECT_EQ(result.loss_curve[e].samples_seen, result.epochs[e].samples_seen);
    }
  }
  // Windows of 3 steps that straddle epochs: ceil(total / 3) values, ending at every third step.
  f.settings.loss_every = 3;
  DataParallelTrainer windows(*f.workload, f.backend, MPI_COMM_WORLD, f.settings);
  const LoopResult curve = windows.train();
  if (f.rank == 0) {
    const int64_t total = steps_per_epoch * 4;
    ASSERT_EQ(static_cast<int64_t>(curve.loss_curve.size()), (total + 2) / 3);
    for (std::size_t w = 0; w < curve.loss_curve.size(); ++w) {
      EXPECT_EQ(curve.loss_curve[w].samples_seen, std::min<int64_t>(3 * (w + 1), total) * samples_per_step);
      EXPECT_TRUE(std::isfinite(curve.loss_curve[w].train_loss));
    }
  } else {
    EXPECT_TRUE(curve.loss_curve.empty());
  }
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

// Trains a fresh Iris MLP for at least 50 steps with `settings` and returns its parameters; on
// GPU `cuda_device` with device "cuda".
std::vector<float> trained_parameters(PointSettings settings, int cuda_device = kNoCudaDevice) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  settings.ranks = size;
  settings.batch_size = kBatch;
  settings.lr = 0.5;
  const int workers = worker_layout(settings, 0, size).workers;
  const int steps_per_epoch = 120 / (kBatch * workers);
  settings.epochs = (50 + steps_per_epoch - 1) / steps_per_epoch;
  auto workload = make_workload(settings, cuda_device);
  auto backend = make_gradient_sync(settings.backend, backend_options(settings), MPI_COMM_WORLD);
  DataParallelTrainer trainer(*workload, *backend, MPI_COMM_WORLD, settings);
  trainer.broadcast_parameters();
  trainer.train();
  return flat_parameters(*workload);
}

// The largest difference between `parameters` and `reference`, relative where they exceed 1.
double worst_difference(const std::vector<float>& parameters, const std::vector<float>& reference) {
  double worst = 0;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(parameters[i]) - reference[i]) /
                                std::max(1.0, std::abs(static_cast<double>(reference[i]))));
  }
  return worst;
}

TEST(DataParallelTrainer, EveryBackendWithAndWithoutBucketsAndOverlapTrainsTheSameParameters) {
  PointSettings settings;
  settings.backend = "allreduce";
  const std::vector<float> reference = trained_parameters(settings);
  for (const auto& info : backend_table()) {
    if (info.name == "gloo" && !gloo_available()) continue;  // built without libgloo-dev
    if (info.device_memory_only) continue;                   // nccl: GPU memory only
    if (refuses_across_nodes(std::string(info.name))) continue;
    for (const double bucket_mb : {25.0, 1.0 / 1024}) {
      for (const bool overlap : {false, true}) {
        settings.backend = std::string(info.name);
        apply_setting(settings, "ps_server_trains", true, "test");  // same workers, same batches: the same computation
        settings.bucket_mb = bucket_mb;
        settings.overlap = overlap;
        const std::vector<float> parameters = trained_parameters(settings);
        ASSERT_EQ(parameters.size(), reference.size());
        EXPECT_LE(worst_difference(parameters, reference), 1e-5)
            << info.name << " bucket_mb=" << bucket_mb << " overlap=" << overlap;
      }
    }
  }
}

// On a GPU (tests gpu_training_*, label gpu; skipped without a GPU, a LibTorch with CUDA or a
// CUDA build): cuda_ipc, which reduces the gradients in GPU memory, trains the same parameters as
// allreduce, which stages them through the host, with and without buckets and overlap.
TEST(GpuTraining, CudaIpcTrainsTheSameParametersAsAllreduce) {
  if (const CudaStatus cuda = cuda_status(); !cuda.usable) GTEST_SKIP() << cuda.reason;
  if (const std::string problem = training_device_problem("cuda"); !problem.empty()) {
    GTEST_SKIP() << problem;
  }
  if (const std::string reason = find_backend("cuda_ipc").unavailable_reason(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  const int device = select_cuda_device(MPI_COMM_WORLD);
  PointSettings settings;
  settings.device = "cuda";
  settings.backend = "allreduce";
  const std::vector<float> reference = trained_parameters(settings, device);
  for (const double bucket_mb : {25.0, 1.0 / 1024}) {
    for (const bool overlap : {false, true}) {
      settings.backend = "cuda_ipc";
      settings.bucket_mb = bucket_mb;
      settings.overlap = overlap;
      const std::vector<float> parameters = trained_parameters(settings, device);
      ASSERT_EQ(parameters.size(), reference.size());
      EXPECT_LE(worst_difference(parameters, reference), 1e-5) << "bucket_mb=" << bucket_mb << " overlap=" << overlap;
      EXPECT_EQ(parameters, rank_zeros(parameters)) << "the same bits on every rank";
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
