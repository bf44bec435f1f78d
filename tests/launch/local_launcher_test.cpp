#include "harness/launch/local_launcher.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace harness {
namespace {

bool has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

LaunchRequest request(int ranks, int threads_per_rank = 0) {
  LaunchRequest request;
  request.settings.ranks = ranks;
  request.settings.threads_per_rank = threads_per_rank;
  request.worker_argv = {"/opt/harness", "worker", "--output", "x.json"};
  return request;
}

TEST(LocalLauncher, OneRankOnTwoCoresGetsTwoUnboundThreads) {
  const auto argv = LocalLauncher(2, false).command_for(request(1));
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 3),
            (std::vector<std::string>{"mpirun", "-n", "1"}));
  EXPECT_FALSE(has(argv, "--allow-run-as-root"));
  EXPECT_FALSE(has(argv, "--oversubscribe"));
  EXPECT_TRUE(has(argv, "--bind-to"));
  EXPECT_TRUE(has(argv, "OPENBLAS_NUM_THREADS=2"));
  EXPECT_TRUE(has(argv, "HARNESS_THREADS_PER_RANK=2"));
  // The worker command comes last, unchanged.
  EXPECT_EQ(std::vector<std::string>(argv.end() - 4, argv.end()), request(1).worker_argv);
}

TEST(LocalLauncher, RanksAreNeverBoundToOneCore) {
  const auto argv = LocalLauncher(2, false).command_for(request(2));
  EXPECT_TRUE(has(argv, "--bind-to"));
  EXPECT_TRUE(has(argv, "none"));
  EXPECT_FALSE(has(argv, "--oversubscribe"));
  EXPECT_TRUE(has(argv, "OMP_NUM_THREADS=1"));
}

TEST(LocalLauncher, MoreRanksThanCoresOversubscribe) {
  const auto argv = LocalLauncher(2, true).command_for(request(4));
  EXPECT_TRUE(has(argv, "--oversubscribe"));
  EXPECT_TRUE(has(argv, "--allow-run-as-root"));
  EXPECT_TRUE(has(argv, "--bind-to"));
}

TEST(LocalLauncher, ExplicitThreadsOverrideTheDefault) {
  const auto argv = LocalLauncher(8, false).command_for(request(2, 3));
  EXPECT_TRUE(has(argv, "OPENBLAS_NUM_THREADS=3"));
}

}  // namespace
}  // namespace harness
