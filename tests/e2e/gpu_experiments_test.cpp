// The shipped GPU experiments (experiments/gpu/) end to end on a machine with a GPU (CTest label
// gpu; they skip elsewhere, where EndToEnd.GpuExperimentsSayWhyTheyCannotRunHere checks their
// refusal instead): each file as it is, cut to seconds with --set, runs every point, or, where
// this machine has fewer GPUs than a backend needs (nccl: a GPU per rank), is refused in one line
// before launch.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "backends/registry.h"
#include "e2e_helpers.h"
#include "workloads/registry.h"

namespace harness::e2e {
namespace {

// Few sizes and iterations for the comm sweeps, few samples for the training ones; every key is a
// setting no shipped GPU experiment sweeps, and each is moot for the other kind.
const std::vector<std::string> kCut = {
    "--set", "comm_max_bytes=65536",  "--set", "comm_iterations=3", "--set", "comm_warmup_iterations=1",
    "--set", "epochs=1",              "--set", "dataset_size=1024", "--set", "test_size=64"};

// Ranks of the largest point of an experiment with a nccl point, by file name: nccl needs a GPU
// for each of them on the node.
const std::map<std::string, int> kNcclRanks = {{"nccl_cuda", 2}};

TEST(GpuExperiments, EveryShippedOneRunsOrIsRefusedForTheGpusHere) {
  const CudaStatus cuda = cuda_status();
  if (!cuda.usable) GTEST_SKIP() << cuda.reason;
  if (const std::string problem = training_device_problem("cuda"); !problem.empty()) GTEST_SKIP() << problem;
  const fs::path dir = scratch("gpu_experiments");
  int ran = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(HARNESS_SOURCE_DIR) / "experiments" / "gpu")) {
    const std::string name = entry.path().stem().string();
    const fs::path out = dir / name;
    std::vector<std::string> arguments = {"run", entry.path().string(), "--out", out.string()};
    arguments.insert(arguments.end(), kCut.begin(), kCut.end());
    const HarnessRun run = run_harness(arguments, dir / (name + ".log"));
    if (const auto nccl = kNcclRanks.find(name); nccl != kNcclRanks.end() && cuda.devices < nccl->second) {
      EXPECT_EQ(run.outcome.exit_code, 2) << name << "\n" << explained(run);
      ASSERT_EQ(run.output.size(), 1U) << name << "\n" << joined(run.output);
      EXPECT_NE(run.output[0].find("backend \"nccl\" needs a GPU per rank"), std::string::npos) << run.output[0];
      continue;
    }
    EXPECT_EQ(run.outcome.exit_code, 0) << name << "\n" << explained(run);
    const auto rows = read_csv(out / "summary.csv");
    EXPECT_FALSE(rows.empty()) << name;
    for (const auto& row : rows) {
      EXPECT_EQ(row.at("status"), "ok") << name << " " << row.at("id") << ": " << row.at("reason");
      // Provenance: the GPUs, and how the buffers reached the backend.
      EXPECT_NE(row.at("gpus").find(" on "), std::string::npos) << name << " " << row.at("id");
      const std::string& backend = row.at("backend");
      const std::string& path = row.at("exchange_path");
      if (row.at("ranks") == "1") {
        EXPECT_EQ(path, "none (one rank)") << name << " " << row.at("id");
      } else if (backend == "cuda_ipc" || backend == "nccl") {
        EXPECT_EQ(path, backend) << name << " " << row.at("id");
      } else if (backend == "allreduce" && path == "device pointers") {
        // A CUDA-aware MPI takes them as they are.
      } else {
        EXPECT_EQ(path, "pinned host staging") << name << " " << row.at("id") << " " << backend;
      }
    }
    ++ran;
  }
  EXPECT_GE(ran, 4) << "comm_cuda, cnn_cuda, cnn_two_ranks_one_gpu and resnet50_cuda run on any GPU";
}

}  // namespace
}  // namespace harness::e2e
