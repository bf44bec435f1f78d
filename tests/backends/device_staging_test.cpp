// The device path without a GPU checks what users meet (the reasons CUDA cannot run); with a
// GPU (a HARNESS_WITH_CUDA build on a CUDA machine) it checks the staging round trip.
#include "backends/device_staging.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <vector>

#include "backends/registry.h"
#include "harness/common/errors.h"
#ifdef HARNESS_WITH_CUDA
#include "tests/backends/stream_gate.h"
#endif

namespace harness {
namespace {

// Doubles the buffer: what allreduce_sum does on two ranks holding the same values.
class DoublingSync final : public GradientSync {
 public:
  std::string_view name() const override { return "doubling"; }
  void allreduce_sum(std::span<float> buffer) override {
    for (float& value : buffer) value *= 2;
  }
};

TEST(DeviceStaging, StatusExplainsWhyCudaCannotRun) {
  const CudaStatus status = cuda_status();
#ifdef HARNESS_WITH_CUDA
  if (status.usable) {
    EXPECT_GT(status.devices, 0);
    EXPECT_TRUE(status.reason.empty());
  } else {
    EXPECT_EQ(status.devices, 0);
    EXPECT_NE(status.reason.find("CUDA device"), std::string::npos) << status.reason;
  }
#else
  EXPECT_FALSE(status.usable);
  EXPECT_NE(status.reason.find("-DHARNESS_WITH_CUDA=ON"), std::string::npos) << status.reason;
  EXPECT_FALSE(mpi_accepts_device_pointers());
  EXPECT_THROW(DeviceBuffer(4), NotSupported);
#endif
}

// Records what reaches it, under the name of a backend that reduces GPU memory only.
class RecordingNcclSync final : public GradientSync {
 public:
  std::string_view name() const override { return "nccl"; }
  void allreduce_sum(std::span<float> buffer) override {
    seen_data = buffer.data();
    seen_count = buffer.size();
  }
  const float* seen_data = nullptr;
  std::size_t seen_count = 0;
};

// nccl gets the device address as it is, never a pinned host copy, whatever the MPI library; no
// GPU is needed to see that, since nothing is copied.
TEST(DeviceStaging, ABackendOnGpuMemoryGetsTheDevicePointerNeverAStagedCopy) {
  RecordingNcclSync nccl;
#ifdef HARNESS_WITH_CUDA
  DeviceStagedSync device_path(nccl);
  EXPECT_EQ(device_path.path(), "nccl");
  float* const device_address = reinterpret_cast<float*>(0x7f0000001000);  // never dereferenced
  device_path.allreduce_sum(device_address, 1000003);
  EXPECT_EQ(nccl.seen_data, device_address);
  EXPECT_EQ(nccl.seen_count, 1000003U);
#else
  EXPECT_THROW(DeviceStagedSync{nccl}, NotSupported);
#endif
}

TEST(DeviceStaging, PinnedStagingRoundTripsThroughTheHostBackend) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  DoublingSync host_backend;
  // Device pointers go only to a backend whose table entry accepts them; this one is not in the
  // table, so it must be staged.
  DeviceStagedSync staged(host_backend);
  EXPECT_EQ(staged.path(), "pinned host staging");
  for (const std::size_t count : {0UL, 1UL, 1000003UL}) {
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000) - 500.0F;
    DeviceBuffer device(count);
    device.copy_from_host(host);
    staged.allreduce_sum(device.data(), count);
    std::vector<float> result(count);
    device.copy_to_host(result);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(result[i], 2 * host[i]) << "element " << i;
  }
}

// Doubles every element it is given and adds 1, and remembers each call's length: a staged buffer
// comes back as 2x + 1 only if every element went through the backend exactly once.
class CountingSync final : public GradientSync {
 public:
  std::string_view name() const override { return "counting"; }
  void allreduce_sum(std::span<float> buffer) override {
    call_lengths.push_back(buffer.size());
    for (float& value : buffer) value = 2 * value + 1;
  }
  std::vector<std::size_t> call_lengths;
};

// Above one chunk the buffer is pipelined: each chunk reaches the backend once, in the plan's
// order, and the sums are the whole buffer's (the values are exact in float, so equal means
// equal). Twice in a row on one object, so that the reused pinned buffer, streams and events are
// checked too; sizes below, at and above one chunk, and 3.5 chunks; with the default chunk and
// with a small one set (staging_chunk_bytes).
TEST(DeviceStaging, PipelinedStagingReducesEveryElementOnceInThePlansChunks) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  for (const std::size_t chunk : {kStagingChunkFloats, std::size_t{1000}}) {
    CountingSync host_backend;
    DeviceStagedSync staged(host_backend, chunk);
    ASSERT_EQ(staged.path(), "pinned host staging");
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk + 1,
                                    std::size_t{1000003}, 7 * chunk / 2}) {
      for (int round = 0; round < 2; ++round) {
        std::vector<float> host(count);
        for (std::size_t i = 0; i < count; ++i) host[i] = 0.25F * static_cast<float>((i + round) % 1000) - 125.0F;
        DeviceBuffer device(count);
        device.copy_from_host(host);
        host_backend.call_lengths.clear();
        staged.allreduce_sum(device.data(), count);
        std::vector<std::size_t> planned;
        for (const StagingChunk& piece : staging_chunks(count, chunk)) planned.push_back(piece.count);
        EXPECT_EQ(host_backend.call_lengths, planned) << count << " floats in chunks of " << chunk << ", round " << round;
        std::vector<float> result(count);
        device.copy_to_host(result);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(result[i], 2 * host[i] + 1) << "element " << i << " of " << count << ", round " << round;
        }
      }
    }
  }
}

#ifdef HARNESS_WITH_CUDA
// Doubles what it is given and, at its first call, queues a gate on the legacy default stream: the
// kernels that a training thread queues there while the communication thread stages a bucket
// (the rest of backward, with overlap).
class QueuesWorkMeanwhileSync final : public GradientSync {
 public:
  std::string_view name() const override { return "queues work meanwhile"; }
  void allreduce_sum(std::span<float> buffer) override {
    if (!gate) gate = std::make_unique<StreamGate>(cudaStreamLegacy);
    for (float& value : buffer) value *= 2;
  }
  std::unique_ptr<StreamGate> gate;
};
#endif

// Staging waits for the work that wrote the buffer, never for work queued on the legacy default
// stream after the call began: neither its copies out nor its copies back, for a buffer of one
// chunk (staged in one piece) as for a pipelined one. A cudaMemcpy on the legacy stream would
// queue the copy back behind the gate, and the call would last until the gate's watchdog opened it.
TEST(DeviceStaging, NoCopyWaitsForWorkQueuedOnTheDefaultStreamDuringTheCall) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
#ifdef HARNESS_WITH_CUDA
  constexpr std::size_t kChunk = 1000;
  for (const std::size_t count : {std::size_t{1}, kChunk - 1, kChunk, 7 * kChunk / 2}) {
    QueuesWorkMeanwhileSync host_backend;
    DeviceStagedSync staged(host_backend, kChunk);
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 100) - 50.0F;
    DeviceBuffer device(count);
    device.copy_from_host(host);
    staged.allreduce_sum(device.data(), count);
    ASSERT_TRUE(host_backend.gate) << "the backend was not called";
    EXPECT_FALSE(host_backend.gate->opened_by_watchdog())
        << count << " floats: the call waited for work queued on the default stream after it began";
    host_backend.gate->open();
    std::vector<float> result(count);
    device.copy_to_host(result);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(result[i], 2 * host[i]) << "element " << i << " of " << count;
  }
#endif
}

// A host backend with 4 reduction threads that can scatter its sums, its levers left to "auto":
// records what staging asks of it, and doubles every element it is given.
class LeverRecordingSync final : public GradientSync {
 public:
  std::string_view name() const override { return "lever recording"; }
  int host_threads() const override { return 4; }
  bool scatters_sums() const override { return true; }
  StagingLeverSettings staging_lever_settings() const override { return {}; }
  void use_host_threads(int threads) override { threads_used.push_back(threads); }
  void allreduce_sum(std::span<float> buffer) override {
    ++whole_calls;
    for (float& value : buffer) value *= 2;
  }
  std::vector<std::span<const float>> allreduce_sum_scattered(std::span<float> buffer) override {
    ++scattered_calls;
    for (float& value : buffer) value *= 2;
    return {buffer};
  }
  void end_scattered() override { ++ends; }
  std::vector<int> threads_used;
  int whole_calls = 0;
  int scattered_calls = 0;
  int ends = 0;
};

// Staging picks the levers by the buffer's size (staging_levers.h): one thread and no gathering
// below 16 MiB, all four threads and the copy engine gathering from 16 MiB; the sums are the same.
TEST(DeviceStaging, AutoLeversArePickedByTheStagedBuffersSize) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  for (const std::size_t bytes : {std::size_t{1} << 20, std::size_t{16} << 20}) {
    LeverRecordingSync host_backend;
    DeviceStagedSync staged(host_backend);
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 1000) - 500.0F;
    DeviceBuffer device(count);
    device.copy_from_host(host);
    staged.allreduce_sum(device.data(), count);
    const bool large = bytes >= kStagingLeversFromBytes;
    EXPECT_EQ(host_backend.threads_used, std::vector<int>{large ? 4 : 1}) << bytes << " bytes";
    EXPECT_EQ(host_backend.scattered_calls > 0, large) << bytes << " bytes";
    EXPECT_EQ(host_backend.whole_calls > 0, !large) << bytes << " bytes";
    EXPECT_EQ(host_backend.ends, large ? 1 : 0);
    std::vector<float> result(count);
    device.copy_to_host(result);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(result[i], 2 * host[i]) << "element " << i << " of " << count;
    // What the records say of it.
    const std::vector<StagingLeverStep> steps = staging_lever_steps(host_backend, true, kStagingChunkFloats);
    ASSERT_EQ(steps.size(), 2U);
    EXPECT_EQ(steps[1], (StagingLeverStep{kStagingLeversFromBytes, {4, true}}));
  }
}

// A one-rank point's backend (make_gradient_sync gives one rank nothing to exchange).
class NothingToExchangeSync final : public GradientSync {
 public:
  std::string_view name() const override { return "allreduce"; }
  void allreduce_sum(std::span<float> /*buffer*/) override { ++calls; }
  bool exchanges() const override { return false; }
  int calls = 0;
};

TEST(DeviceStaging, OneRankIsNeitherStagedNorReduced) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  NothingToExchangeSync backend;
  DeviceStagedSync staged(backend);
  EXPECT_EQ(staged.path(), kNoExchangePath);
  std::vector<float> host(1000, 1.5F);
  DeviceBuffer device(host.size());
  device.copy_from_host(host);
  staged.allreduce_sum(device.data(), host.size());
  EXPECT_EQ(backend.calls, 0);
  std::vector<float> result(host.size());
  device.copy_to_host(result);
  EXPECT_EQ(result, host);
}

TEST(DeviceStaging, TheRanksGpuIsDescribedAsCudaNamesIt) {
  if (!cuda_status().usable) GTEST_SKIP() << cuda_status().reason;
  const CudaDeviceFacts facts = cuda_device_facts(0);
  EXPECT_EQ(facts.index, 0);
  EXPECT_FALSE(facts.name.empty());
  EXPECT_TRUE(std::regex_match(facts.pci_bus_id, std::regex("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9]")))
      << facts.pci_bus_id;
  EXPECT_GT(facts.memory_bytes, int64_t{1} << 30);
  EXPECT_TRUE(std::regex_match(facts.driver_version, std::regex("[0-9]+\\.[0-9]"))) << facts.driver_version;
  EXPECT_TRUE(std::regex_match(facts.runtime_version, std::regex("[0-9]+\\.[0-9]"))) << facts.runtime_version;
}

// Staging's plan, which needs no GPU: which pieces of a buffer the host backend reduces, in order.
TEST(StagingChunks, CutFullChunksFromTheStartAndAShorterLastOne) {
  using Plan = std::vector<StagingChunk>;
  EXPECT_EQ(staging_chunks(0, 4), (Plan{{0, 0}}));  // one empty call, as every rank makes it
  EXPECT_EQ(staging_chunks(1, 4), (Plan{{0, 1}}));
  EXPECT_EQ(staging_chunks(3, 4), (Plan{{0, 3}}));
  EXPECT_EQ(staging_chunks(4, 4), (Plan{{0, 4}}));  // exactly a chunk: one piece
  EXPECT_EQ(staging_chunks(5, 4), (Plan{{0, 4}, {4, 1}}));  // a chunk + 1
  EXPECT_EQ(staging_chunks(7, 4), (Plan{{0, 4}, {4, 3}}));  // odd
  EXPECT_EQ(staging_chunks(14, 4), (Plan{{0, 4}, {4, 4}, {8, 4}, {12, 2}}));  // 3.5 chunks
  EXPECT_EQ(staging_chunks(8, 1), (Plan{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}}));
  EXPECT_THROW(staging_chunks(8, 0), Error);
}

TEST(StagingChunks, CoverTheBufferOnceInOrderWhateverItsLength) {
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{1000}}) {
    for (std::size_t count = 0; count <= 5 * chunk + 2; ++count) {
      const std::vector<StagingChunk> plan = staging_chunks(count, chunk);
      ASSERT_EQ(plan.size(), count == 0 ? std::size_t{1} : (count + chunk - 1) / chunk) << count << " / " << chunk;
      std::size_t next = 0;
      for (std::size_t k = 0; k < plan.size(); ++k) {
        ASSERT_EQ(plan[k].offset, next) << count << " / " << chunk << ", chunk " << k;
        ASSERT_EQ(plan[k].count, k + 1 < plan.size() ? chunk : count - next) << count << " / " << chunk;
        ASSERT_TRUE(plan[k].count > 0 || count == 0);
        next += plan[k].count;
      }
      ASSERT_EQ(next, count);
    }
  }
}

// By default 4 MiB of floats: up to that a buffer is staged in one piece, as before.
TEST(StagingChunks, TheDefaultChunkIsFourMebibytes) {
  EXPECT_EQ(kStagingChunkFloats * sizeof(float), std::size_t{4} << 20);
  EXPECT_EQ(staging_chunks(1000003).size(), 1U);
  EXPECT_EQ(staging_chunks(kStagingChunkFloats).size(), 1U);
  EXPECT_EQ(staging_chunks(kStagingChunkFloats + 1).size(), 2U);
  EXPECT_EQ(staging_chunks(std::size_t{16} << 20).size(), 16U);  // 64 MiB of floats
}

// Without a GPU: the path names and MPS's detection, which the warning before a sweep uses.
TEST(GpuFacts, ExchangePathsNameHowBuffersReachTheBackend) {
  NothingToExchangeSync one_rank;
  EXPECT_EQ(exchange_path(one_rank, false), kNoExchangePath);
  EXPECT_EQ(exchange_path(one_rank, true), kNoExchangePath);
  DoublingSync host_only;  // not in the backend table: staged on a device
  EXPECT_EQ(exchange_path(host_only, false), "host memory");
  EXPECT_EQ(exchange_path(host_only, true), "pinned host staging");
}

// The records' staging levers (staging_levers.h) only where buffers are staged through the host.
TEST(GpuFacts, StagingLeversAreRecordedOnlyWhereBuffersAreStaged) {
  NothingToExchangeSync one_rank;
  EXPECT_TRUE(staging_lever_steps(one_rank, true, kStagingChunkFloats).empty());
  DoublingSync host_only;  // one thread, nothing to gather
  EXPECT_TRUE(staging_lever_steps(host_only, false, kStagingChunkFloats).empty()) << "host memory";
  EXPECT_EQ(staging_lever_steps(host_only, true, kStagingChunkFloats),
            (std::vector<StagingLeverStep>{{0, {1, false}}}));
}

TEST(GpuFacts, MpsRunsWhenItsControlPipeIsThere) {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("harness-mps-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(directory);
  const char* saved = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv("CUDA_MPS_PIPE_DIRECTORY", directory.c_str(), 1);
  EXPECT_FALSE(mps_control_running());
  ASSERT_EQ(mkfifo((directory / "control").c_str(), 0600), 0);
  EXPECT_TRUE(mps_control_running());
  if (saved != nullptr) {
    setenv("CUDA_MPS_PIPE_DIRECTORY", saved_value.c_str(), 1);
  } else {
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
  }
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace harness
