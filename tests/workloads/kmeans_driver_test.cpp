// Distributed K-means gives the one-rank result: the same iterations, purity and (within float
// rounding of the sums' order) centroids, on Iris and on Gaussian blobs, with every backend.
// Runs on every rank under mpirun (1 to 4 ranks); the reference runs on MPI_COMM_SELF.
#include "workloads/kmeans_driver.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "backends/registry.h"
#include "backends/gloo_allreduce.h"

namespace harness {
namespace {

KMeansResult cluster(const PointSettings& settings, MPI_Comm communicator) {
  const KMeansData data = load_kmeans_data(settings);
  auto backend = make_gradient_sync(settings.backend, communicator);
  return run_distributed_kmeans(data, *backend, communicator, settings);
}

using DataAndBackend = std::tuple<std::string, std::string>;

class KMeansEquivalence : public ::testing::TestWithParam<DataAndBackend> {};

TEST_P(KMeansEquivalence, PRanksGiveTheOneRankResult) {
  const auto& [data, backend] = GetParam();
  if (backend == "gloo" && !gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  PointSettings settings;
  settings.workload = "kmeans";
  apply_setting(settings, "kmeans_data", data, "test");
  settings.backend = backend;
  apply_setting(settings, "ps_server_trains", true, "test");
  settings.epochs = 100;
  apply_setting(settings, "kmeans_k", data == "iris" ? 3 : 5, "test");
  settings.dataset_size = data == "iris" ? 0 : 20'011;  // not divisible by the rank counts

  const KMeansResult distributed = cluster(settings, MPI_COMM_WORLD);
  const KMeansResult reference = cluster(settings, MPI_COMM_SELF);

  EXPECT_TRUE(reference.converged);
  EXPECT_EQ(distributed.converged, reference.converged);
  EXPECT_EQ(distributed.iterations, reference.iterations) << size << " ranks";
  ASSERT_EQ(distributed.centroids.size(), reference.centroids.size());
  for (std::size_t i = 0; i < reference.centroids.size(); ++i) {
    EXPECT_NEAR(distributed.centroids[i], reference.centroids[i],
                1e-5 * std::max(1.0F, std::abs(reference.centroids[i])))
        << "coordinate " << i << " on " << size << " ranks";
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    ASSERT_FALSE(reference.training.epochs.empty());
    const EpochRecord& last = distributed.training.epochs.back();
    EXPECT_EQ(last.test_accuracy, reference.training.epochs.back().test_accuracy);
    EXPECT_NEAR(last.train_loss, reference.training.epochs.back().train_loss, 1e-5);
    // Well separated blobs are recovered exactly; Iris's two overlapping species are not.
    EXPECT_GE(last.test_accuracy, data == "iris" ? 0.8 : 1.0);
  }
}

// Warm-up iterations run (the same clustering) but are neither timed nor counted as trained.
TEST(KMeans, WarmupIterationsAreNotTimed) {
  PointSettings settings;
  settings.workload = "kmeans";
  settings.backend = "allreduce";
  settings.epochs = 100;
  apply_setting(settings, "kmeans_k", 3, "test");
  const KMeansResult all = cluster(settings, MPI_COMM_WORLD);
  settings.warmup_steps = 2;
  const KMeansResult warmed = cluster(settings, MPI_COMM_WORLD);
  EXPECT_EQ(warmed.iterations, all.iterations);
  ASSERT_GT(all.iterations, 2);
  EXPECT_EQ(warmed.training.steps.step_s.size(), static_cast<std::size_t>(all.iterations - 2));
  EXPECT_EQ(warmed.training.samples_trained, all.training.samples_trained * (all.iterations - 2) / all.iterations);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    ASSERT_EQ(warmed.training.epochs.size(), all.training.epochs.size());
    EXPECT_EQ(warmed.training.epochs.back().samples_seen, all.training.epochs.back().samples_seen);
  }
}

// A run that converges within its warm-up keeps iterating (from its converged centroids) until
// an iteration is timed: otherwise its record says "ok" with nothing measured.
TEST(KMeans, ConvergingWithinTheWarmupStillTimesAnIteration) {
  PointSettings settings;
  settings.workload = "kmeans";
  settings.backend = "allreduce";
  settings.epochs = 100;
  apply_setting(settings, "kmeans_k", 3, "test");
  const int converges_after = cluster(settings, MPI_COMM_WORLD).iterations;
  settings.warmup_steps = converges_after + 3;
  const KMeansResult warmed = cluster(settings, MPI_COMM_WORLD);
  EXPECT_TRUE(warmed.converged);
  EXPECT_EQ(warmed.iterations, converges_after + 4);  // the warm-up, then one timed iteration
  EXPECT_EQ(warmed.training.steps.step_s.size(), 1U);
  EXPECT_GT(warmed.training.samples_trained, 0);
}

// A dataset_size below the Iris file's rows clusters a seeded sample of every species, not the
// file's first rows (which list one species after another).
TEST(KMeans, ASubsetOfIrisHoldsEverySpecies) {
  PointSettings settings;
  settings.workload = "kmeans";
  settings.dataset_size = 50;
  const KMeansData data = load_kmeans_data(settings);
  ASSERT_EQ(data.count(), 50);
  for (int32_t species = 0; species < 3; ++species) {
    EXPECT_GT(std::count(data.labels.begin(), data.labels.end(), species), 5) << species;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Data, KMeansEquivalence,
    ::testing::Combine(::testing::Values("iris", "blobs"), ::testing::ValuesIn(host_memory_backend_names())),
    [](const ::testing::TestParamInfo<DataAndBackend>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

TEST(KMeans, BlobsAreReproducibleAndShardsCoverEveryPoint) {
  PointSettings settings;
  apply_setting(settings, "kmeans_data", "blobs", "test");
  apply_setting(settings, "kmeans_k", 4, "test");
  settings.dataset_size = 1003;
  const KMeansData first = load_kmeans_data(settings);
  const KMeansData second = load_kmeans_data(settings);
  EXPECT_EQ(first.points, second.points);
  EXPECT_EQ(first.count(), 1003);
  EXPECT_EQ(first.dimensions, kBlobDimensions);
  // The shards' counts add up to all points, whatever the rank count.
  const std::vector<float> centroids = initial_centroids(first, 4, 42);
  const KMeansBufferLayout layout{4, first.dimensions, first.classes};
  for (int ranks = 1; ranks <= 5; ++ranks) {
    double counted = 0;
    for (int r = 0; r < ranks; ++r) {
      std::vector<float> buffer(layout.size());
      accumulate_shard(first, first.count() * r / ranks, first.count() * (r + 1) / ranks, centroids,
                       layout, buffer);
      for (int c = 0; c < 4; ++c) counted += buffer[layout.counts() + c];
    }
    EXPECT_EQ(counted, 1003) << ranks << " ranks";
  }
}

}  // namespace
}  // namespace harness
