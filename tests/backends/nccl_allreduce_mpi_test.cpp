// Backend nccl on GPUs against MPI_Allreduce, on every rank under mpirun (tests/CMakeLists.txt:
// 1 rank, and 2 where a node has 2 GPUs; label gpu). Written for p ranks, one GPU each; without
// a GPU, a CUDA build or NCCL the GPU tests skip, and the refusals that need none still run.
#include "backends/nccl_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/device_staging.h"
#include "backends/registry.h"
#include "harness/common/errors.h"
#include "tests/backends/reduction_inputs.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// Why the GPU tests cannot run on this rank's node, or "" (the same on every rank of a node).
std::string why_not_here(const Communicator& communicator) {
  if (std::string reason = nccl_unavailable_reason(); !reason.empty()) return reason;
  const CudaStatus cuda = cuda_status();
  if (!cuda.usable) return cuda.reason;
  return nccl_gpu_sharing_problem(node_place(communicator).local_size, cuda.devices);
}

// Every rank's `mine`, in rank order, on every rank (collective).
std::vector<std::string> gather_bus_ids(const Communicator& communicator, const std::string& mine) {
  constexpr int kLength = 32;
  std::vector<char> all(static_cast<std::size_t>(kLength * communicator.size()));
  std::string padded = mine;
  padded.resize(kLength, '\0');
  MPI_Allgather(padded.data(), kLength, MPI_CHAR, all.data(), kLength, MPI_CHAR, communicator.handle());
  std::vector<std::string> ids;
  for (int rank = 0; rank < communicator.size(); ++rank) ids.emplace_back(all.data() + kLength * rank);
  return ids;
}

BackendOptions gpu_options(const Communicator& communicator) {
  BackendOptions options;
  options.device = "cuda";
  options.ranks = communicator.size();
  options.ranks_per_node = node_place(communicator).local_size;
  return options;
}

TEST(NcclAllreduce, EqualsMpiAllreduceAtEverySizeTwiceInARow) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (const std::string reason = why_not_here(communicator); !reason.empty()) GTEST_SKIP() << reason;
  select_cuda_device(communicator);
  const auto backend = make_gradient_sync("nccl", gpu_options(communicator), communicator);
  // The trainer's buckets and the comm benchmark reach the backend through the device path. With
  // one rank there is nothing to exchange: make_gradient_sync sets nothing up and the device path
  // calls nothing (kNoExchangePath). So the sums below also go to NCCL's backend made directly,
  // which makes a communicator and calls ncclAllReduce even for one rank.
  DeviceStagedSync device_path(*backend);
  EXPECT_EQ(device_path.path(), world.size == 1 ? kNoExchangePath : std::string_view("nccl"));
  const auto nccl = make_nccl_allreduce(communicator, gpu_options(communicator));
  EXPECT_EQ(nccl->name(), "nccl");
  for (const int code : {0, 1, -3, -2, -1, 1000003}) {
    const std::size_t count = element_count(code, world.size);
    // Twice in a row on one communicator, different data each time.
    for (int round = 0; round < 2; ++round) {
      const std::vector<float> local = random_buffer(count, 4321, world.rank, round);
      const std::vector<float> expected = mpi_allreduce_sum(local);
      for (const bool through_device_path : {true, false}) {
        DeviceBuffer device(count);
        device.copy_from_host(local);
        if (through_device_path) {
          device_path.allreduce_sum(device.data(), count);
        } else {
          nccl->allreduce_sum(std::span<float>(device.data(), count));
        }
        std::vector<float> reduced(count);
        device.copy_to_host(reduced);
        const char* how = through_device_path ? "through the device path" : "by NCCL's backend made directly";
        EXPECT_EQ(elements_off(reduced, expected), 0)
            << "of " << count << " elements differ from MPI_Allreduce " << how << ", round " << round + 1;
        EXPECT_TRUE(same_bits_as_rank_zero(reduced))
            << "ranks disagree on the sum of " << count << " elements " << how << ", round " << round + 1;
      }
    }
  }
}

// Where the launcher did not know the GPUs (a SLURM job), the backend refuses two ranks on one GPU
// when it is made, in one line naming them and the GPU's PCI bus id, before NCCL would ("Duplicate
// GPU detected"). Ranks on GPUs of their own are not refused, however many GPUs each sees.
TEST(NcclAllreduce, RanksSharingAGpuAreRefusedWhenItIsMade) {
  const Communicator communicator(MPI_COMM_WORLD);
  const CudaStatus cuda = cuda_status();
  if (!nccl_unavailable_reason().empty() || !cuda.usable) GTEST_SKIP() << "needs NCCL and a GPU";
  const int device = select_cuda_device(communicator);
  // Where each rank's GPU is, as the backend gathers it.
  const std::vector<std::string> hosts = all_host_names(communicator);
  std::vector<RankGpuPlace> places;
  const std::vector<std::string> bus_ids = gather_bus_ids(communicator, cuda_device_facts(device).pci_bus_id);
  for (std::size_t rank = 0; rank < hosts.size(); ++rank) places.push_back({hosts[rank], bus_ids[rank]});
  const std::string sharing = nccl_shared_gpu_problem(places);
  if (sharing.empty()) GTEST_SKIP() << "every rank has a GPU of its own here (the sums test makes the backend)";
  try {
    make_gradient_sync("nccl", gpu_options(communicator), communicator);
    ADD_FAILURE() << "ranks sharing a GPU were accepted";
  } catch (const NotSupported& error) {
    EXPECT_EQ(std::string(error.what()), "ranks: " + sharing);
  }
}

// Host memory never reaches NCCL: made for device "cpu" it refuses, in every build, with the
// reason the validation gives before launch.
TEST(NcclAllreduce, RefusesToBeMadeForHostMemory) {
  const Communicator communicator(MPI_COMM_WORLD);
  BackendOptions options;
  options.ranks = communicator.size();
  try {
    make_gradient_sync("nccl", options, communicator);
    ADD_FAILURE() << "made for host memory";
  } catch (const NotSupported& error) {
    const std::string unavailable = nccl_unavailable_reason();
    EXPECT_EQ(std::string(error.what()),
              unavailable.empty() ? "device: backend \"nccl\" reduces GPU memory only; expected \"cuda\", got \"cpu\""
                                  : unavailable);
  }
}

}  // namespace
}  // namespace harness
