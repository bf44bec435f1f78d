// `nccl`: NVIDIA's collective library, the one under PyTorch DDP and Horovod on GPUs, through its
// C API as nccl-tests uses it: rank 0 makes the unique id (ncclGetUniqueId), MPI broadcasts it,
// and every rank joins with ncclCommInitRank on its own GPU. One NCCL communicator per backend
// object, so one per point, with a CUDA stream of its own; ncclCommDestroy at the end, and
// ncclCommAbort after a failure (or when the backend goes away during an exception), which does
// not wait for the peers.
//
// GPU memory only: allreduce_sum takes a span of device memory (the device path hands it device
// pointers, see device_staging.h), reduces it in place and returns when the sums are there. Host
// memory never reaches it: device "cpu" and K-means (whose sums stay in host memory) are refused
// before launch (nccl_problem) and again when the backend is made.
//
// One GPU per rank: NCCL refuses two ranks on one GPU ("Duplicate GPU detected", since NCCL 2.5,
// and its maintainers say it cannot work). A point that would do that is refused before launch
// where the launcher knows the GPUs (by count), and when the backend is made (by the GPUs' PCI
// bus ids: ranks that each see one GPU of a node, as under SLURM's --gpus-per-task, have GPUs of
// their own though each counts one).
//
// A call waits for its reduction by polling the stream and NCCL's asynchronous error, as
// nccl-tests do: an error NCCL reports there aborts the communicator and fails the call
// (CommError), where a blocking cudaStreamSynchronize would wait forever.
//
// Compiled in every build; without HARNESS_WITH_NCCL (a build without CUDA, or NCCL not found at
// configure time) nccl_unavailable_reason() says why and make_nccl_allreduce throws NotSupported.
//
// Threading: one call at a time, from any thread (with overlap, the communication thread): each
// call makes the backend's GPU current on the calling thread first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend_options.h"
#include "backends/gradient_sync.h"

namespace harness {

// Why this build lacks the backend, or "" when it has it.
std::string nccl_unavailable_reason();

// The version of the NCCL library loaded ("2.28.9"), or "" when this build has none.
std::string nccl_version();

// Why `ranks_per_node` ranks cannot each have a GPU of their own on a node whose ranks see
// `gpus_per_node` GPUs, or "" (also when gpus_per_node < 0: unknown). A pure function, so that
// the refusal is tested where no GPU is.
std::string nccl_gpu_sharing_problem(int ranks_per_node, int gpus_per_node);

// Where a rank's GPU is: the rank's host and the GPU's PCI bus id (cudaDeviceGetPCIBusId,
// "0000:2A:00.0"), which tells GPUs of one host apart whatever each rank's CUDA_VISIBLE_DEVICES.
struct RankGpuPlace {
  std::string host;
  std::string pci_bus_id;
};

// Why ranks placed on these GPUs (in rank order) cannot each have one of their own, or "": the
// first two ranks on one host whose GPUs have the same PCI bus id (compared without case). A pure
// function, so that the refusal is tested where no GPU is.
std::string nccl_shared_gpu_problem(const std::vector<RankGpuPlace>& places);

// Why the backend cannot serve a point with these options (BackendInfo::problem), starting with
// the setting at fault ("device: ..."), or "".
std::string nccl_problem(const BackendOptions& options);

// The backend on this rank's current GPU (select_cuda_device). Collective over `communicator`.
// Throws NotSupported when the build lacks it, nccl_problem refuses the options or two ranks are
// on one GPU (nccl_shared_gpu_problem); CommError when CUDA or NCCL fail.
std::unique_ptr<GradientSync> make_nccl_allreduce(const Communicator& communicator, const BackendOptions& options);

}  // namespace harness
