// Scheme local_sgd (harness/rank/local_sgd.h): with sync_every 1 it is synchronous SGD, on every
// CPU backend; with more, the ranks train apart, average their models every sync_every steps and at
// each epoch's end, and all end with one model. Runs on every rank under mpirun (1 to 4 ranks).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/forwarding_sync.h"
#include "backends/gloo_allreduce.h"
#include "backends/mpi_allreduce.h"
#include "backends/registry.h"
#include "harness/common/errors.h"
#include "harness/rank/trainer.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "tests/rank/parameter_vectors.h"

namespace harness {
namespace {

// Counts the backend calls: one per bucket and exchange.
class CountingSync final : public ForwardingSync {
 public:
  using ForwardingSync::ForwardingSync;
  int calls = 0;

 private:
  void before_call() override { ++calls; }
};

struct Trained {
  std::vector<float> parameters;  // flattened, in the workload's order
  int backend_calls = 0;
  LoopResult result;
};

Trained train(PointSettings settings) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  settings.ranks = size;
  auto workload = make_workload(settings, kNoCudaDevice);
  CountingSync backend(make_gradient_sync(settings.backend, backend_options(settings), MPI_COMM_WORLD));
  DataParallelTrainer trainer(*workload, backend, MPI_COMM_WORLD, settings);
  trainer.broadcast_parameters();
  Trained trained;
  trained.result = trainer.train();
  trained.backend_calls = backend.calls;
  for (const auto& parameter : workload->parameters()) {
    trained.parameters.insert(trained.parameters.end(), parameter.data_ptr<float>(),
                              parameter.data_ptr<float>() + parameter.numel());
  }
  return trained;
}

PointSettings iris(const std::string& backend) {
  PointSettings settings;
  settings.workload = "iris_mlp";
  settings.backend = backend;
  settings.batch_size = 2;
  settings.lr = 0.5;
  settings.dataset_size = 96;
  settings.epochs = 2;
  settings.bucket_mb = 1024;  // one bucket: one backend call per exchange
  return settings;
}

class LocalSgdAtSyncEveryOne : public ::testing::TestWithParam<std::string> {};

// The mean over the ranks of p - lr·g_r is p - lr·mean(g_r): the same model as synchronous SGD's
// after every step, up to float rounding (within 1e-6 of each weight after 2 epochs), and the same
// number of exchanges. With backend ps, rank 0 serves and only adds zeros (and so is a rank whose
// model is averaged but which trains nothing).
TEST_P(LocalSgdAtSyncEveryOne, EqualsSynchronousSgd) {
  const std::string& backend = GetParam();
  if (backend == "gloo" && !gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const bool server_trains : {true, false}) {
    if (backend != "ps" && !server_trains) continue;
    if (backend == "ps" && !server_trains && size < 2) continue;  // a server needs a worker
    PointSettings settings = iris(backend);
    if (backend == "ps") apply_setting(settings, "ps_server_trains", server_trains, "test");
    const Trained synchronous = train(settings);
    settings.scheme = "local_sgd";
    apply_setting(settings, "sync_every", 1, "test");
    const Trained local = train(settings);
    ASSERT_EQ(local.parameters.size(), synchronous.parameters.size());
    EXPECT_LE(test::largest_difference(local.parameters, synchronous.parameters), 1e-6F)
        << backend << " on " << size << " ranks, ps_server_trains " << server_trains;
    EXPECT_EQ(local.backend_calls, synchronous.backend_calls) << backend;
    EXPECT_EQ(local.result.epochs.size(), synchronous.result.epochs.size());
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCpuBackend, LocalSgdAtSyncEveryOne,
                         ::testing::Values("allreduce", "ps", "ring", "gloo", "shm", "hier"),
                         [](const auto& info) { return info.param; });

// sync_every 5 over epochs of 96 / (2 × ranks) steps: an averaging every 5 steps and one more at
// each epoch's end where 5 does not divide it; every rank ends with the same model, which on 2
// ranks or more is not synchronous SGD's.
TEST(LocalSgd, RanksAverageEverySyncEveryStepsAndAtEachEpochsEndAndEndAlike) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  PointSettings settings = iris("allreduce");
  const Trained synchronous = train(settings);
  settings.scheme = "local_sgd";
  apply_setting(settings, "sync_every", 5, "test");
  const Trained local = train(settings);

  const int64_t steps = local.result.steps_per_epoch;
  ASSERT_EQ(steps, 96 / (2 * size));
  // One rank's backend exchanges nothing and is never called (gradient_sync.h).
  const int64_t per_epoch = size == 1 ? 0 : steps / 5 + (steps % 5 == 0 ? 0 : 1);
  EXPECT_EQ(local.backend_calls, settings.epochs * per_epoch) << steps << " steps per epoch";
  EXPECT_EQ(synchronous.backend_calls, size == 1 ? 0 : settings.epochs * steps);

  // Every rank's model is rank 0's, bit for bit.
  std::vector<float> rank0 = local.parameters;
  MPI_Bcast(rank0.data(), static_cast<int>(rank0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(test::largest_difference(local.parameters, rank0), 0.0F);
  // Apart for 5 steps, the ranks' models are not the synchronous one (but close: same data).
  const float apart = test::largest_difference(local.parameters, synchronous.parameters);
  if (size > 1) {
    EXPECT_GT(apart, 1e-4F);
  } else {
    EXPECT_LE(apart, 1e-6F);  // one rank: local SGD is plain SGD
  }
  // Rank 0 recorded both epochs, evaluating the mean model after each.
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    EXPECT_EQ(local.result.epochs.size(), 2U);
  }
}

}  // namespace
}  // namespace harness
