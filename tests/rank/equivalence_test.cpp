// The correctness invariant of synchronous data-parallel SGD: p ranks with per-rank batch b
// compute the same thing as one rank with batch p·b over the same samples in the same order.
// Runs on every rank under mpirun (1 to 4 ranks): the p-rank run uses MPI_COMM_WORLD, the
// one-rank reference runs on MPI_COMM_SELF on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>

#include "backends/registry.h"
#include "backends/gloo_allreduce.h"
#include "harness/rank/trainer.h"
#include "workloads/mnist_cnn.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "tests/rank/parameter_vectors.h"
#include "tests/workloads/cnn_export.h"

namespace harness {
namespace {

// The workload, trained on the ranks of `communicator` with `settings`.
std::unique_ptr<Workload> trained(PointSettings settings, MPI_Comm communicator) {
  int size = 1;
  MPI_Comm_size(communicator, &size);
  settings.ranks = size;
  auto workload = make_workload(settings, kNoCudaDevice);
  auto backend = make_gradient_sync(settings.backend, communicator);
  DataParallelTrainer trainer(*workload, *backend, communicator, settings);
  trainer.broadcast_parameters();
  trainer.train();
  return workload;
}

std::vector<float> train_and_flatten(const PointSettings& settings, MPI_Comm communicator) {
  const std::unique_ptr<Workload> workload = trained(settings, communicator);
  return test::flattened_parameters(*workload);
}

using WorkloadAndBackend = std::tuple<std::string, std::string>;

class DataParallelEquivalence : public ::testing::TestWithParam<WorkloadAndBackend> {};

TEST_P(DataParallelEquivalence, PRanksWithBatchBEqualOneRankWithBatchPB) {
  const auto& [workload_and_engine, backend] = GetParam();
  const std::string workload = workload_and_engine.substr(0, workload_and_engine.find('/'));
  const std::string engine =
      workload_and_engine.find('/') == std::string::npos
          ? "torch"
          : workload_and_engine.substr(workload_and_engine.find('/') + 1);
  if (backend == "gloo" && !gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  if ((workload == "mnist_cnn" || workload == "torchscript") && !std::filesystem::exists(kDefaultMnistDirectory)) {
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // The backends' sums, over 3 and 4 ranks and with every backend, are the other workloads' to
  // prove; what these two add is that their gradients are their models' (a module's own, a
  // transformer's), which 2 ranks through one MPI and one shared-memory backend show.
  if ((workload == "torchscript" || workload == "gpt") && (size > 2 || (backend != "allreduce" && backend != "shm"))) {
    GTEST_SKIP() << "proven at 2 ranks with allreduce and shm";
  }

  PointSettings settings;
  settings.workload = workload;
  settings.engine = engine;
  settings.backend = backend;
  apply_setting(settings, "ps_server_trains", true, "test");  // every rank trains, as in the one-rank reference
  if (workload == "iris_mlp") {
    settings.batch_size = 2;
    settings.lr = 0.5;
    settings.dataset_size = 96;                 // divisible by every p·b here
    settings.epochs = 96 / (2 * size) >= 20 ? 1 : 2;  // at least 20 steps
  } else {
    settings.batch_size = 4;
    settings.lr = 0.05;
    settings.dataset_size = 20 * 4 * size;      // exactly 20 steps of p·b samples
    settings.test_size = 10;
    settings.epochs = 1;
  }
  if (workload == "torchscript") {
    // The export of the harness's CNN, on the built-in CNN's data.
    apply_setting(settings, "model_path", test::shipped_model("mnist_cnn.pt").string(), "test");
    apply_setting(settings, "model_data", "mnist", "test");
  }
  const std::vector<float> distributed = train_and_flatten(settings, MPI_COMM_WORLD);

  PointSettings single = settings;
  single.backend = "allreduce";
  single.batch_size = settings.batch_size * size;
  const std::vector<float> reference = train_and_flatten(single, MPI_COMM_SELF);

  ASSERT_EQ(distributed.size(), reference.size());
  EXPECT_LE(test::relative_difference(distributed, reference), 1e-5)
      << workload << " with " << backend << " on " << size << " ranks";
}

TEST(DataParallelEquivalence, StrongScalingSplitsOneGlobalBatchOverTheRanks) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  PointSettings settings;
  settings.scaling = "strong";
  settings.batch_size = 12;  // the global batch: 12, 6 + 6, 4 + 4 + 4 or 3 × 4
  settings.lr = 0.5;
  settings.dataset_size = 96;
  settings.epochs = 3;
  const std::vector<float> distributed = train_and_flatten(settings, MPI_COMM_WORLD);
  const std::vector<float> reference = train_and_flatten(settings, MPI_COMM_SELF);
  EXPECT_LE(test::relative_difference(distributed, reference), 1e-5) << size << " ranks";
}

// `ps` without ps_server_trains: rank 0 only serves, yet it evaluates. Its BatchNorm statistics
// must be a training rank's, not the initial ones (mean 0, variance 1) it never updated.
TEST(DataParallelEquivalence, AServingRankZeroEvaluatesWithATrainingRanksBatchNormStatistics) {
  int size = 1;
  int rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (size < 2) GTEST_SKIP() << "a server and a training rank need two ranks";
  PointSettings settings;
  settings.workload = "resnet";
  settings.backend = "ps";
  settings.batch_size = 4;
  settings.dataset_size = 8 * (size - 1);
  settings.test_size = 4;
  settings.epochs = 1;
  apply_setting(settings, "image_size", 32, "test");
  apply_setting(settings, "num_classes", 10, "test");
  const std::unique_ptr<Workload> workload = trained(settings, MPI_COMM_WORLD);
  // The running statistics (floats; num_batches_tracked is an integer) of rank 1 and rank 0.
  std::vector<float> statistics;
  for (const torch::Tensor& buffer : workload->buffers()) {
    if (buffer.scalar_type() != torch::kFloat) continue;
    const torch::Tensor flat = buffer.contiguous().view({-1});
    statistics.insert(statistics.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  ASSERT_FALSE(statistics.empty());
  std::vector<float> first_training(statistics.size());
  if (rank == 1) {
    MPI_Send(statistics.data(), static_cast<int>(statistics.size()), MPI_FLOAT, 0, 7, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Recv(first_training.data(), static_cast<int>(first_training.size()), MPI_FLOAT, 1, 7, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    EXPECT_EQ(statistics, first_training);
    EXPECT_TRUE(std::any_of(statistics.begin(), statistics.end(), [](float v) { return v != 0 && v != 1; }));
  }
}

// A model exported from PyTorch trains as the built-in network it copies: the TorchScript export of
// the CNN, from the built-in CNN's initial weights, has the built-in CNN's loss at every step
// (loss_every 1) on the same data, ranks and backend.
TEST(DataParallelEquivalence, TheTorchScriptCnnTrainsToTheBuiltInCnnsLosses) {
  if (!std::filesystem::exists(kDefaultMnistDirectory)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  int size = 1;
  int rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PointSettings settings;
  settings.workload = "mnist_cnn";
  settings.backend = "allreduce";
  settings.batch_size = 8;
  settings.lr = 0.05;
  settings.dataset_size = 10 * 8 * size;  // 10 steps
  settings.epochs = 1;
  settings.test_size = 10;
  settings.loss_every = 1;
  settings.ranks = size;
  // One file for all ranks, written by rank 0 (every rank would write the same weights).
  const auto file = std::filesystem::temp_directory_path() / "harness_cnn_export_equivalence.pt";
  if (rank == 0) test::save_cnn_export_with_builtin_weights(settings, file);
  MPI_Barrier(MPI_COMM_WORLD);
  PointSettings exported = settings;
  exported.workload = "torchscript";
  apply_setting(exported, "model_path", file.string(), "test");
  apply_setting(exported, "model_data", "mnist", "test");

  const auto losses = [](const PointSettings& point) {
    auto workload = make_workload(point, kNoCudaDevice);
    auto backend = make_gradient_sync(point.backend, MPI_COMM_WORLD);
    DataParallelTrainer trainer(*workload, *backend, MPI_COMM_WORLD, point);
    trainer.broadcast_parameters();
    std::vector<double> curve;
    for (const auto& value : trainer.train().loss_curve) curve.push_back(value.train_loss);
    return curve;
  };
  const std::vector<double> builtin = losses(settings);
  const std::vector<double> own = losses(exported);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove(file);
  if (rank != 0) return;  // the loss curve is rank 0's
  ASSERT_EQ(own.size(), builtin.size());
  ASSERT_EQ(builtin.size(), 10U);
  for (std::size_t step = 0; step < builtin.size(); ++step) {
    EXPECT_NEAR(own[step], builtin[step], 1e-5) << "step " << step << " on " << size << " ranks";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, DataParallelEquivalence,
    ::testing::Combine(::testing::Values("iris_mlp", "iris_mlp/blas", "mnist_cnn", "torchscript", "gpt"),
                       ::testing::ValuesIn(host_memory_backend_names())),
    [](const ::testing::TestParamInfo<WorkloadAndBackend>& info) {
      std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
      std::replace(name.begin(), name.end(), '/', '_');
      return name;
    });

}  // namespace
}  // namespace harness
