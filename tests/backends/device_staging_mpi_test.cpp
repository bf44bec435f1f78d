// Staging from GPU memory through every backend that reduces host memory, against MPI_Allreduce,
// on every rank under mpirun (tests/CMakeLists.txt: 2 and 3 ranks; label gpu). The ranks may
// share one GPU; shm and hier also with 3 reduction threads per rank, shm also with its sums
// gathered by the copy engine. Without a usable GPU the tests skip.
#include "backends/device_staging.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <string>
#include <vector>

#include "backends/gloo_allreduce.h"
#include "backends/registry.h"
#include "tests/backends/reduction_inputs.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// element_count's sizes, and three that are pipelined (more than one chunk): -4 a chunk and one
// element, -5 three and a half chunks, -6 five chunks (20 MiB: "auto" levers on, staging_levers.h).
std::size_t staged_count(int code, int ranks) {
  if (code == -4) return kStagingChunkFloats + 1;
  if (code == -5) return 7 * kStagingChunkFloats / 2;
  if (code == -6) return 5 * kStagingChunkFloats;
  return element_count(code, ranks);
}

TEST(DeviceStagingRanks, EveryHostBackendStagedEqualsMpiAllreduceTwiceInARow) {
  const World world;
  const Communicator communicator(MPI_COMM_WORLD);
  if (const CudaStatus cuda = cuda_status(); !cuda.usable) GTEST_SKIP() << cuda.reason;
  select_cuda_device(communicator);
  for (const std::string& name : host_memory_backend_names()) {
    if (name == "gloo" && !gloo_available()) continue;  // PyTorch's LibTorch has no gloo
    if (refuses_across_nodes(name)) continue;
    // shm and hier also with 3 reduction threads per rank (shm_reduce_threads), the staged chunks
    // split among them; shm also with the copy engine gathering the sums from their owners'
    // segments (shm_copy_engine_gathers: pipelined buffers, -4 and -5); and both levers left at
    // "auto" (variant 4: on for 20 MiB, -6, with 3 threads of threads_per_rank 3; off below).
    for (const int variant : {0, 1, 2, 3, 4}) {
      const bool levers_auto = variant == 4;
      const int threads = variant % 2 == 0 ? 1 : 3;
      const bool gathers = variant >= 2;
      if ((threads > 1 || levers_auto) && name != "shm" && name != "hier") continue;
      if (gathers && !levers_auto && name != "shm") continue;
      BackendOptions options;
      options.ranks = world.size;
      options.device = "cuda";
      options.threads_per_rank = 3;
      if (!levers_auto) {
        options.owned["shm_reduce_threads"] = threads;
        options.owned["shm_copy_engine_gathers"] = gathers;
      }
      const auto backend = make_gradient_sync(name, options, communicator);
      EXPECT_EQ(backend->scatters_sums(), gathers && name == "shm" && world.size > 1) << name;
      DeviceStagedSync staged(*backend);
      // A CUDA-aware MPI takes allreduce's device pointers as they are: nothing staged to check.
      if (staged.path() != "pinned host staging") continue;
      for (const int code : {0, 1, -3, -2, -1, 1000003, -4, -5, -6}) {
        if (code == -6 && !levers_auto) continue;
        const std::size_t count = staged_count(code, world.size);
        for (int round = 0; round < 2; ++round) {
          const std::vector<float> local = random_buffer(count, 8765, world.rank, round);
          const std::vector<float> expected = mpi_allreduce_sum(local);
          DeviceBuffer device(count);
          device.copy_from_host(local);
          staged.allreduce_sum(device.data(), count);
          std::vector<float> reduced(count);
          device.copy_to_host(reduced);
          const int wrong = elements_off(reduced, expected);
          const std::string levers =
              levers_auto ? "levers auto"
                          : std::to_string(threads) +
                                " reduction threads, copy engine gathers: " + (gathers ? "true" : "false");
          EXPECT_EQ(wrong, 0) << name << " (" << levers << "): " << wrong << " of " << count
                              << " elements differ from MPI_Allreduce, round " << round + 1;
          EXPECT_TRUE(same_bits_as_rank_zero(reduced)) << name << ": ranks disagree on the sum of " << count << " elements";
        }
      }
    }
  }
}

}  // namespace
}  // namespace harness
