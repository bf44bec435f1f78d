// Backend cuda_ipc's refusals, its place in the table and its crossover setting, where no GPU is
// (no MPI either): what users meet before launch. Its sums on GPUs are
// cuda_ipc_allreduce_mpi_test.cpp's (label gpu).
#include "backends/cuda_ipc_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backends/registry.h"
#include "harness/common/errors.h"

namespace harness {
namespace {

TEST(CudaIpcAllreduce, ProblemNamesTheSettingAtFault) {
  const BackendInfo& cuda_ipc = find_backend("cuda_ipc");
  ASSERT_EQ(cuda_ipc.problem, cuda_ipc_problem);
  BackendOptions options;  // device "cpu"
  EXPECT_EQ(cuda_ipc_problem(options),
            "device: backend \"cuda_ipc\" reduces GPU memory only; expected \"cuda\", got \"cpu\"");
  options.device = "cuda";
  EXPECT_EQ(cuda_ipc_problem(options), "");
  options.host_memory_workload = "kmeans";
  EXPECT_EQ(cuda_ipc_problem(options),
            "workload: backend \"cuda_ipc\" reduces GPU memory only, and kmeans adds up its sums in host memory; "
            "expected a backend other than \"cuda_ipc\" for kmeans");
  options.host_memory_workload.clear();
  options.ranks = 4;
  options.nodes = 2;
  options.ranks_per_node = 2;
  EXPECT_EQ(cuda_ipc_problem(options),
            "nodes: backend \"cuda_ipc\" needs every rank on one node (CUDA IPC maps GPU memory between the "
            "processes of one machine), got 2 nodes; expected nodes 1, or a backend that stages through the host "
            "such as \"hier\"");
}

// Unlike nccl, ranks that share a GPU are the case it is for: never refused for it.
TEST(CudaIpcAllreduce, RanksSharingAGpuAreNotRefused) {
  BackendOptions options;
  options.device = "cuda";
  options.ranks = 4;
  options.ranks_per_node = 4;
  options.gpus_per_node = 1;
  EXPECT_EQ(cuda_ipc_problem(options), "");
  EXPECT_NE(find_backend("nccl").problem(options), "") << "nccl refuses the same point";
}

TEST(CudaIpcAllreduce, InTheTableForGpuMemoryOnlyWithItsCrossoverSetting) {
  const BackendInfo& cuda_ipc = find_backend("cuda_ipc");
  EXPECT_TRUE(cuda_ipc.device_memory_only);
  EXPECT_FALSE(cuda_ipc.accepts_device_pointers) << "that flag is for a CUDA-aware MPI";
  EXPECT_EQ(cuda_ipc.memory_traffic, nullptr) << "its bound is the GPU's memory, not the host's";
  // The less of its kernels' traffic per byte: one-shot p + 3 (5 at 2 ranks), two-shot 5 + 1/p.
  ASSERT_NE(cuda_ipc.device_memory_traffic, nullptr);
  EXPECT_DOUBLE_EQ(cuda_ipc.device_memory_traffic(2), 5.0);
  EXPECT_DOUBLE_EQ(cuda_ipc.device_memory_traffic(3), 5.0 + 1.0 / 3);
  EXPECT_DOUBLE_EQ(cuda_ipc.device_memory_traffic(4), 5.25);
  const auto host = host_memory_backend_names();
  EXPECT_EQ(std::count(host.begin(), host.end(), "cuda_ipc"), 0);
  ASSERT_NE(cuda_ipc.settings, nullptr);
  const auto settings = cuda_ipc.settings();
  ASSERT_EQ(settings.size(), 2U);
  EXPECT_EQ(settings[0].key, "cuda_ipc_one_shot_below_bytes");
  EXPECT_EQ(settings[0].fallback, Json(kCudaIpcOneShotBelowBytes));
  EXPECT_EQ(kCudaIpcOneShotBelowBytes, 16U * 1024 * 1024) << "measured on one H100, 2 to 4 ranks";
  EXPECT_TRUE(settings[0].own_crossover) << "the comm report compares its two kernels";
  EXPECT_EQ(settings[0].normalise(Json(0), "x"), Json(0)) << "0: never one-shot";
  EXPECT_THROW(settings[0].normalise(Json(-1), "x"), ConfigError);
  EXPECT_THROW(settings[0].normalise(Json("big"), "x"), ConfigError);
  // How its ranks wait for each other: on the GPU's stream unless told otherwise.
  EXPECT_EQ(settings[1].key, "cuda_ipc_device_arrivals");
  EXPECT_EQ(settings[1].fallback, Json(true));
  EXPECT_FALSE(settings[1].own_crossover);
  EXPECT_EQ(settings[1].normalise(Json(false), "x"), Json(false));
  EXPECT_THROW(settings[1].normalise(Json(1), "x"), ConfigError);
  BackendOptions options;
  EXPECT_TRUE(cuda_ipc_device_arrivals(options));
  options.owned["cuda_ipc_device_arrivals"] = false;
  EXPECT_FALSE(cuda_ipc_device_arrivals(options));
}

// The build has it exactly when it is a CUDA build.
TEST(CudaIpcAllreduce, BuildHasItWhereCudaIs) {
  const std::string reason = cuda_ipc_unavailable_reason();
  EXPECT_EQ(find_backend("cuda_ipc").unavailable_reason(), reason);
#ifdef HARNESS_WITH_CUDA
  EXPECT_EQ(reason, "");
#else
  EXPECT_EQ(reason,
            "backend \"cuda_ipc\" is not in this build: it needs a CUDA build (configure with -DHARNESS_WITH_CUDA=ON "
            "where a CUDA toolkit is installed; docs/gpus.md)");
#endif
}

}  // namespace
}  // namespace harness
