// Scheme async_ps (harness/rank/async_ps.h): at max_staleness 0 it is synchronous SGD on its W
// workers, with one server or with the parameters sharded over two; above 0 no applied gradient
// is staler than the bound, and a faster worker takes more of the epoch. Runs on every rank
// under mpirun; the parts that need a server and a worker skip on 1 rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "backends/registry.h"
#include "harness/rank/async_ps.h"
#include "harness/rank/trainer.h"
#include "workloads/factories.h"
#include "tests/rank/parameter_vectors.h"

namespace harness {
namespace {

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

PointSettings iris() {
  PointSettings settings;
  settings.workload = "iris_mlp";
  settings.batch_size = 2;
  settings.lr = 0.5;
  settings.dataset_size = 96;
  settings.epochs = 2;
  settings.warmup_steps = 3;  // a warm-up segment before the timed one in the first epoch
  return settings;
}

struct Trained {
  std::vector<float> parameters;
  LoopResult result;
};

// async_ps on every rank of the world, `servers` of them serving.
Trained train_async(PointSettings settings, int servers, const Json& staleness) {
  settings.ranks = world_size();
  settings.backend = "ps";
  settings.scheme = "async_ps";
  apply_setting(settings, "ps_servers", servers, "test");
  apply_setting(settings, "max_staleness", staleness, "test");
  auto workload = make_workload(settings, kNoCudaDevice);
  AsyncParameterServer scheme(*workload, MPI_COMM_WORLD, settings);
  scheme.broadcast_parameters();
  Trained trained;
  trained.result = scheme.train(nullptr);
  trained.parameters = test::flattened_parameters(*workload);
  return trained;
}

// sync with allreduce on the world's ranks from `first` on (the async run's workers), the model
// then sent to every rank of the world.
std::vector<float> train_sync_on_ranks_from(PointSettings settings, int first) {
  MPI_Comm workers = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() >= first ? 0 : MPI_UNDEFINED, world_rank(), &workers);
  std::vector<float> parameters;
  if (workers != MPI_COMM_NULL) {
    int size = 0;
    MPI_Comm_size(workers, &size);
    settings.ranks = size;
    settings.backend = "allreduce";
    auto workload = make_workload(settings, kNoCudaDevice);
    auto backend = make_gradient_sync(settings.backend, backend_options(settings), workers);
    DataParallelTrainer trainer(*workload, *backend, workers, settings);
    trainer.broadcast_parameters();
    trainer.train();
    parameters = test::flattened_parameters(*workload);
    backend.reset();
    MPI_Comm_free(&workers);
  }
  auto count = static_cast<int64_t>(parameters.size());
  MPI_Bcast(&count, 1, MPI_INT64_T, first, MPI_COMM_WORLD);
  parameters.resize(static_cast<std::size_t>(count));
  MPI_Bcast(parameters.data(), static_cast<int>(count), MPI_FLOAT, first, MPI_COMM_WORLD);
  return parameters;
}

TEST(AsyncPsSlices, CoverEveryParameterOnceInOrder) {
  for (const int64_t count : {1, 7, 99, 100, 4099}) {
    for (int servers = 1; servers <= 5; ++servers) {
      int64_t next = 0;
      for (int k = 0; k < servers; ++k) {
        const auto slice = AsyncParameterServer::slice_of(count, k, servers);
        EXPECT_EQ(slice.begin, next) << count << " over " << servers;
        EXPECT_LE(slice.end - slice.begin, count / servers + 1);
        EXPECT_GE(slice.end - slice.begin, count / servers);
        next = slice.end;
      }
      EXPECT_EQ(next, count);
    }
  }
}

// At max_staleness 0 the server sums each step's W gradients in worker order and applies their
// mean: the model of sync on the W workers after the same steps (within 1e-6 of each weight after
// 2 epochs), warm-up segment included; with the parameters sharded over 2 servers, each slice
// updated by its own server, too.
TEST(AsyncPsAtStalenessZero, EqualsSynchronousSgdOnItsWorkers) {
  const int size = world_size();
  for (const int servers : {1, 2}) {
    if (size <= servers) continue;
    const PointSettings settings = iris();
    const Trained asynchronous = train_async(settings, servers, 0);
    const std::vector<float> synchronous = train_sync_on_ranks_from(settings, servers);
    ASSERT_EQ(asynchronous.parameters.size(), synchronous.size());
    EXPECT_LE(test::largest_difference(asynchronous.parameters, synchronous), 1e-6F)
        << size - servers << " workers, " << servers << " servers";
    // Every rank holds the servers' model at the end.
    std::vector<float> rank0 = asynchronous.parameters;
    MPI_Bcast(rank0.data(), static_cast<int>(rank0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
    EXPECT_EQ(test::largest_difference(asynchronous.parameters, rank0), 0.0F);
    const int workers = size - servers;
    const int64_t steps = 96 / (2 * workers);
    EXPECT_EQ(asynchronous.result.steps_per_epoch, steps);
    // Every rank has the same number of timed steps (a worker's are its own: all took one batch a step).
    EXPECT_EQ(asynchronous.result.steps.step_s.size(), static_cast<std::size_t>(2 * steps - 3));
    if (world_rank() == 0) {
      ASSERT_EQ(asynchronous.result.epochs.size(), 2U);
      // Lockstep: every applied gradient was computed from the latest model.
      EXPECT_EQ(asynchronous.result.async_ps.staleness_counts,
                std::vector<int64_t>{static_cast<int64_t>(workers) * (2 * steps - 3)});
    }
  }
}

// Worker 0 (rank `servers`) sleeps 3 ms in every step: at max_staleness 2 the others run ahead of
// it by at most 2 steps, so no applied gradient is staler than 2, and they take more of the
// epoch's batches than it does; unbounded, they run further ahead.
TEST(AsyncPsAboveZero, NoAppliedGradientIsStalerThanTheBound) {
  const int size = world_size();
  if (size < 3) GTEST_SKIP() << "needs a server and two workers";
  PointSettings settings = iris();
  settings.inject_compute_delay_rank = 1;
  settings.inject_compute_delay_ms = 3;
  const Trained bounded = train_async(settings, 1, 2);
  const Trained unbounded = train_async(settings, 1, "unbounded");
  // Per worker, the batches it took (all ranks learn them).
  const auto batches_of = [&](const Trained& trained) {
    std::vector<int64_t> all(static_cast<std::size_t>(size));
    int64_t mine = trained.result.async_ps.batches;
    MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    return all;
  };
  const std::vector<int64_t> bounded_batches = batches_of(bounded);
  const std::vector<int64_t> unbounded_batches = batches_of(unbounded);
  const int64_t timed_batches = (2 * bounded.result.steps_per_epoch - 3) * (size - 1);
  EXPECT_EQ(std::accumulate(bounded_batches.begin(), bounded_batches.end(), int64_t{0}), timed_batches);
  EXPECT_EQ(std::accumulate(unbounded_batches.begin(), unbounded_batches.end(), int64_t{0}), timed_batches);
  for (int r = 2; r < size; ++r) {
    EXPECT_GT(unbounded_batches[static_cast<std::size_t>(r)], unbounded_batches[1]) << "rank " << r;
  }
  if (world_rank() != 0) return;
  const std::vector<int64_t>& counts = bounded.result.async_ps.staleness_counts;
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), int64_t{0}), timed_batches);
  EXPECT_LE(counts.size(), 3U) << "a gradient staler than 2 was applied";
  EXPECT_GT(counts.size(), 1U) << "no worker ran ahead";
  EXPECT_GT(unbounded.result.async_ps.staleness_counts.size(), 3U) << "unbounded, the fast workers stayed within 2";
}

}  // namespace
}  // namespace harness
