#include "backends/cuda_ipc_placement.h"

#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "backends/cuda_check.h"
#include "harness/common/errors.h"

namespace harness::cuda_ipc {
namespace {

void check_cuda(cudaError_t code, std::string_view operation) { check_cuda_call(code, operation, "cuda_ipc: "); }

constexpr std::size_t kBusIdLength = 32;  // "0000:2A:00.0" and its terminator, with room to spare

}  // namespace

bool on_every_rank(bool ok, const Communicator& communicator) {
  int all = ok ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, communicator.handle()),
            "MPI_Allreduce(cuda_ipc check)");
  return all == 1;
}

void check_one_node(const Communicator& communicator) {
  int smallest_node = node_place(communicator).local_size;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &smallest_node, 1, MPI_INT, MPI_MIN, communicator.handle()),
            "MPI_Allreduce(cuda_ipc node sizes)");
  if (smallest_node == communicator.size()) return;
  throw NotSupported(fmt::format("nodes: backend \"cuda_ipc\" needs every rank on one node (CUDA IPC maps GPU memory "
                                 "between the processes of one machine), but some node holds only {} of the {} "
                                 "ranks; use a backend that stages through the host such as \"hier\" across nodes",
                                 smallest_node, communicator.size()));
}

std::string peer_access_problem(const Communicator& communicator, int device) {
  char mine[kBusIdLength] = {};
  check_cuda(cudaDeviceGetPCIBusId(mine, sizeof mine, device), "cudaDeviceGetPCIBusId");
  std::vector<char> all(kBusIdLength * static_cast<std::size_t>(communicator.size()));
  check_mpi(MPI_Allgather(mine, kBusIdLength, MPI_CHAR, all.data(), kBusIdLength, MPI_CHAR, communicator.handle()),
            "MPI_Allgather(cuda_ipc GPUs)");
  for (int rank = 0; rank < communicator.size(); ++rank) {
    const char* theirs = all.data() + kBusIdLength * static_cast<std::size_t>(rank);
    if (rank == communicator.rank() || std::strncmp(theirs, mine, kBusIdLength) == 0) continue;
    int peer = -1;
    if (cudaDeviceGetByPCIBusId(&peer, theirs) != cudaSuccess) {
      cudaGetLastError();  // not sticky; clear it
      return fmt::format("ranks: backend \"cuda_ipc\" on rank {} cannot see the GPU of rank {} ({}); expected "
                         "every rank of the node to see the same GPUs (CUDA_VISIBLE_DEVICES)",
                         communicator.rank(), rank, theirs);
    }
    int can_access = 0;
    check_cuda(cudaDeviceCanAccessPeer(&can_access, device, peer), "cudaDeviceCanAccessPeer");
    if (can_access == 0) {
      return fmt::format("ranks: backend \"cuda_ipc\" needs ranks on one GPU or on GPUs with peer access, and ranks "
                         "{} and {} are on GPUs {} and {}, which have none (cudaDeviceCanAccessPeer); expected "
                         "CUDA_VISIBLE_DEVICES naming one GPU or GPUs linked by NVLink or a PCIe switch, or a "
                         "backend that stages through the host such as \"hier\"",
                         communicator.rank(), rank, mine, theirs);
    }
  }
  return "";
}

}  // namespace harness::cuda_ipc

#endif  // HARNESS_WITH_CUDA
