// Backend nccl's refusals and its place in the table, where no GPU is (no MPI either): what users
// meet before launch. Its sums on GPUs are nccl_allreduce_mpi_test.cpp's (label gpu).
#include "backends/nccl_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/registry.h"

namespace harness {
namespace {

TEST(NcclAllreduce, TwoRanksOnOneGpuAreRefusedWithTheReason) {
  EXPECT_EQ(nccl_gpu_sharing_problem(1, 1), "");
  EXPECT_EQ(nccl_gpu_sharing_problem(4, 8), "");
  EXPECT_EQ(nccl_gpu_sharing_problem(8, 8), "");
  EXPECT_EQ(nccl_gpu_sharing_problem(64, -1), "") << "unknown GPUs: checked when the backend is made";
  EXPECT_EQ(nccl_gpu_sharing_problem(2, 1),
            "backend \"nccl\" needs a GPU per rank, and 2 ranks on a node whose ranks see 1 GPU would share one, "
            "which NCCL refuses (\"Duplicate GPU detected\", since NCCL 2.5); expected at most 1 rank per node "
            "(CUDA_VISIBLE_DEVICES counts), or a backend that stages through the host such as \"allreduce\"");
  const std::string four_on_three = nccl_gpu_sharing_problem(4, 3);
  EXPECT_NE(four_on_three.find("4 ranks on a node whose ranks see 3 GPUs would share one"), std::string::npos)
      << four_on_three;
  EXPECT_NE(four_on_three.find("expected at most 3 ranks per node"), std::string::npos) << four_on_three;
  EXPECT_NE(nccl_gpu_sharing_problem(1, 0), "");
}

// When the backend is made, ranks are told apart by their GPUs' PCI bus ids, not by how many GPUs
// a rank sees: under SLURM's --gpus-per-task every rank sees one GPU (device 0), a different one.
TEST(NcclAllreduce, RanksSharingAGpuAreFoundByPciBusIdNotByCount) {
  using Places = std::vector<RankGpuPlace>;
  EXPECT_EQ(nccl_shared_gpu_problem(Places{}), "");
  EXPECT_EQ(nccl_shared_gpu_problem(Places{{"a", "0000:2A:00.0"}}), "");
  EXPECT_EQ(nccl_shared_gpu_problem(Places{{"a", "0000:2A:00.0"}, {"a", "0000:3B:00.0"}}), "")
      << "two ranks of a node, each seeing one GPU of its own";
  EXPECT_EQ(nccl_shared_gpu_problem(Places{{"a", "0000:2A:00.0"}, {"b", "0000:2A:00.0"}}), "")
      << "the same bus id on two hosts is two GPUs";
  EXPECT_EQ(nccl_shared_gpu_problem(
                Places{{"a", "0000:2A:00.0"}, {"a", "0000:3B:00.0"}, {"b", "0000:2A:00.0"}, {"a", "0000:2a:00.0"}}),
            "backend \"nccl\" needs a GPU per rank, and ranks 0 and 3 on host a share GPU 0000:2a:00.0 (its PCI bus "
            "id), which NCCL refuses (\"Duplicate GPU detected\", since NCCL 2.5); expected each rank of a node on a "
            "GPU of its own (CUDA_VISIBLE_DEVICES, SLURM's --gpus-per-task), or a backend that stages through the "
            "host such as \"allreduce\"");
  // The first pair found is the first rank that shares, with the first it shares with.
  const std::string problem = nccl_shared_gpu_problem(
      Places{{"a", "0000:01:00.0"}, {"a", "0000:02:00.0"}, {"a", "0000:02:00.0"}, {"a", "0000:01:00.0"}});
  EXPECT_NE(problem.find("ranks 1 and 2 on host a share GPU 0000:02:00.0"), std::string::npos) << problem;
}

TEST(NcclAllreduce, ProblemNamesTheSettingAtFault) {
  const BackendInfo& nccl = find_backend("nccl");
  ASSERT_NE(nccl.problem, nullptr);
  BackendOptions options;  // device "cpu"
  EXPECT_EQ(nccl.problem(options), "device: backend \"nccl\" reduces GPU memory only; expected \"cuda\", got \"cpu\"");
  options.device = "cuda";
  EXPECT_EQ(nccl.problem(options), "");
  options.host_memory_workload = "kmeans";
  EXPECT_EQ(nccl.problem(options),
            "workload: backend \"nccl\" reduces GPU memory only, and kmeans adds up its sums in host memory; "
            "expected a backend other than \"nccl\" for kmeans");
  options.host_memory_workload.clear();
  options.ranks = 2;
  options.ranks_per_node = 2;
  EXPECT_EQ(nccl.problem(options), "") << "GPUs unknown before launch";
  options.gpus_per_node = 2;
  EXPECT_EQ(nccl.problem(options), "");
  options.gpus_per_node = 1;
  EXPECT_EQ(nccl.problem(options), "ranks: " + nccl_gpu_sharing_problem(2, 1));
  options.ranks = 4;
  options.nodes = 2;
  EXPECT_EQ(nccl.problem(options), "ranks_per_node: " + nccl_gpu_sharing_problem(2, 1));
}

TEST(NcclAllreduce, InTheTableForGpuMemoryOnly) {
  const BackendInfo& nccl = find_backend("nccl");
  EXPECT_TRUE(nccl.device_memory_only);
  EXPECT_FALSE(nccl.accepts_device_pointers) << "that flag is for a CUDA-aware MPI";
  const auto host = host_memory_backend_names();
  EXPECT_EQ(std::count(host.begin(), host.end(), "nccl"), 0);
  EXPECT_EQ(host.size() + 2, backend_names().size()) << "all but nccl and cuda_ipc";
}

// The build has the backend exactly when configure found NCCL, and the library loaded is the one
// found (cmake/nccl.cmake prints it): HARNESS_EXPECTED_NCCL_VERSION, "" where it found none.
TEST(NcclAllreduce, BuildHasItWhereConfigureFoundNccl) {
  const std::string reason = nccl_unavailable_reason();
  EXPECT_EQ(find_backend("nccl").unavailable_reason(), reason);
  EXPECT_EQ(nccl_version(), HARNESS_EXPECTED_NCCL_VERSION);
  if (std::string(HARNESS_EXPECTED_NCCL_VERSION).empty()) {
#ifdef HARNESS_WITH_CUDA
    EXPECT_NE(reason.find("HARNESS_NCCL_ROOT"), std::string::npos) << reason;
#else
    EXPECT_NE(reason.find("-DHARNESS_WITH_CUDA=ON"), std::string::npos) << reason;
#endif
    EXPECT_EQ(reason.rfind("backend \"nccl\" is not in this build: ", 0), 0U) << reason;
  } else {
    EXPECT_EQ(reason, "");
  }
}

}  // namespace
}  // namespace harness
