// Backend cuda_ipc's refusals, its place in the table and its crossover setting, where no GPU is
// (no MPI either): what users meet before launch. Its sums on GPUs are
// cuda_ipc_allreduce_mpi_test.cpp's (label gpu).
#include "backends/cuda_ipc_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda_ipc_arrival_modes.h"
#include "backends/cuda_ipc_epochs.h"
#include "backends/cuda_ipc_vectors.h"
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

// The flags' comparison (cuda_ipc_epochs.h): a peer at this epoch or one ahead has arrived, one
// behind has not, across the wrap of 32 bits too.
TEST(CudaIpcAllreduce, FlagsCompareEpochsCyclically) {
  using cuda_ipc::epoch_reached;
  constexpr std::uint32_t kLast = std::numeric_limits<std::uint32_t>::max();
  EXPECT_TRUE(epoch_reached(5, 5));
  EXPECT_TRUE(epoch_reached(6, 5));
  EXPECT_FALSE(epoch_reached(4, 5));
  EXPECT_TRUE(epoch_reached(0, kLast)) << "a peer one ahead, past the wrap";
  EXPECT_FALSE(epoch_reached(kLast, 0)) << "a peer one behind, before the wrap";
  // Why each block counts its own epochs: a flag more than 2^31 behind reads as ahead.
  EXPECT_FALSE(epoch_reached(1, 1U + (1U << 31)));
  EXPECT_TRUE(epoch_reached(1, 2U + (1U << 31)));
}

// Each block of the one-kernel path waits for the calls that used it, not for all calls: a block
// that sat out calls of fewer blocks waits for one more than its flags hold, never for many more.
TEST(CudaIpcAllreduce, EachBlockCountsTheCallsThatUsedIt) {
  using cuda_ipc::BlockEpochCounter;
  using cuda_ipc::kOneShotWithArrivalBlocks;
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(0), 1U);
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(1), 1U);
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(256), 1U);
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(257), 2U);
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(4097), 17U);
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(131072), kOneShotWithArrivalBlocks);
  EXPECT_EQ(cuda_ipc::one_kernel_blocks(std::size_t{1} << 30), kOneShotWithArrivalBlocks);

  BlockEpochCounter counter;
  cuda_ipc::BlockEpochs epochs = counter.next(kOneShotWithArrivalBlocks);
  for (const std::uint32_t epoch : epochs.value) EXPECT_EQ(epoch, 1U);
  for (int call = 0; call < 1000; ++call) epochs = counter.next(1);
  EXPECT_EQ(epochs.value[0], 1001U);
  EXPECT_EQ(epochs.value[1], 1U) << "a block sat out: its epoch stays at its last use";
  const cuda_ipc::BlockEpochs after = counter.next(17);
  EXPECT_EQ(after.value[0], 1002U);
  EXPECT_EQ(after.value[16], 2U);
  EXPECT_EQ(after.value[17], 1U);
  // Its flags hold its last use (1): behind what it waits for (2), so not arrived.
  EXPECT_FALSE(cuda_ipc::epoch_reached(epochs.value[16], after.value[16]));

  // Two ranks' blocks, calls of varying sizes: at every call each block's flag from a peer is the
  // epoch of the peer's previous use of it (not arrived), of this use or of its next (arrived):
  // within one of what the block waits for, so the cyclic comparison is exact. From near the wrap.
  constexpr std::uint32_t kStart = std::numeric_limits<std::uint32_t>::max() - 40;
  BlockEpochCounter mine(kStart);
  BlockEpochCounter peer(kStart);
  std::vector<std::uint32_t> peer_flags(kOneShotWithArrivalBlocks, kStart);
  for (unsigned call = 0; call < 200; ++call) {
    const unsigned blocks = 1 + (call * 7919U) % kOneShotWithArrivalBlocks;
    const cuda_ipc::BlockEpochs waited_for = mine.next(blocks);
    for (unsigned b = 0; b < blocks; ++b) {
      EXPECT_FALSE(cuda_ipc::epoch_reached(peer_flags[b], waited_for.value[b])) << "call " << call << ", block " << b;
    }
    const cuda_ipc::BlockEpochs told = peer.next(blocks);
    for (unsigned b = 0; b < blocks; ++b) {
      peer_flags[b] = told.value[b];
      EXPECT_TRUE(cuda_ipc::epoch_reached(peer_flags[b], waited_for.value[b])) << "call " << call << ", block " << b;
    }
  }
}

// The kernels' 16-byte vectors (cuda_ipc_vectors.h): a scalar head, whole vectors from an element
// where the regions and the destination are aligned, a scalar tail; none where the destination
// cannot be aligned with the regions. Every split covers the range once, whatever its ends.
TEST(CudaIpcAllreduce, KernelsCutTheirRangeIntoAnAlignedBodyOfVectorsAndScalarEnds) {
  using cuda_ipc::vector_split;
  const auto split = [](std::size_t begin, std::size_t end, std::size_t misalignment) {
    const cuda_ipc::VectorSplit cut = vector_split(begin, end, misalignment);
    return std::vector<std::size_t>{cut.body_begin, cut.body_end};
  };
  using Bounds = std::vector<std::size_t>;
  EXPECT_EQ(split(0, 16, 0), (Bounds{0, 16}));
  EXPECT_EQ(split(0, 18, 0), (Bounds{0, 16})) << "a tail of 2";
  EXPECT_EQ(split(3, 18, 0), (Bounds{4, 16})) << "a head of 1, a tail of 2";
  EXPECT_EQ(split(5, 7, 0), (Bounds{7, 7})) << "no whole vector: all head";
  EXPECT_EQ(split(1, 4, 0), (Bounds{4, 4}));
  EXPECT_EQ(split(0, 3, 0), (Bounds{0, 0})) << "all tail";
  EXPECT_EQ(split(9, 9, 0), (Bounds{9, 9})) << "nothing";
  EXPECT_EQ(split(0, 1000, 1), (Bounds{0, 0})) << "a destination one float off: all scalar";
  EXPECT_EQ(split(4, 1000, 2), (Bounds{4, 4}));
  EXPECT_EQ(split(4, 1000, 4), (Bounds{4, 1000})) << "four floats off is aligned";
  for (std::size_t misalignment = 0; misalignment < 4; ++misalignment) {
    for (std::size_t begin = 0; begin < 12; ++begin) {
      for (std::size_t end = begin; end < 40; ++end) {
        const cuda_ipc::VectorSplit cut = vector_split(begin, end, misalignment);
        ASSERT_LE(begin, cut.body_begin);
        ASSERT_LE(cut.body_begin, cut.body_end);
        ASSERT_LE(cut.body_end, end);
        ASSERT_EQ((cut.body_end - cut.body_begin) % 4, 0U);
        if (cut.body_end > cut.body_begin) {
          ASSERT_EQ(cut.body_begin % 4, 0U);
        }
        if (misalignment != 0) {
          ASSERT_EQ(cut.body_begin, cut.body_end);
        } else {
          ASSERT_LT(cut.body_begin - begin, 4U) << "the head is shorter than a vector";
          ASSERT_LT(end - cut.body_end, 4U) << "so is the tail";
        }
      }
    }
  }
}

// Where the ranks arrive after registration's round on the stream: the one-kernel path stays on
// where the driver refused only the stream's operations (it uses none), and goes off with them
// where a wait did not see a peer's write; with the setting off, all goes through the host.
TEST(CudaIpcAllreduce, TheOneKernelPathStaysOnWhereOnlyTheDriverRefusedStreamWaits) {
  using cuda_ipc::ArrivalProof;
  const auto modes = [](bool setting, ArrivalProof proof) {
    const cuda_ipc::ArrivalModes m = cuda_ipc::arrival_modes(setting, proof);
    return std::vector<bool>{m.on_stream, m.in_kernel};
  };
  using Modes = std::vector<bool>;
  EXPECT_EQ(modes(true, ArrivalProof::kWorks), (Modes{true, true}));
  EXPECT_EQ(modes(true, ArrivalProof::kRefused), (Modes{false, true}));
  EXPECT_EQ(modes(true, ArrivalProof::kUnseen), (Modes{false, false}));
  for (const ArrivalProof proof : {ArrivalProof::kWorks, ArrivalProof::kRefused, ArrivalProof::kUnseen}) {
    EXPECT_EQ(modes(false, proof), (Modes{false, false})) << "cuda_ipc_device_arrivals false";
  }
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
