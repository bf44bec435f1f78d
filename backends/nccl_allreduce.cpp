#include "backends/nccl_allreduce.h"

#include <fmt/format.h>

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_NCCL
#include <cuda_runtime_api.h>

#include "backends/cuda_check.h"
#include <nccl.h>

#include <exception>

// The header must be the one of the library that configure found (cmake/nccl.cmake), not another
// NCCL's that an include folder of the CUDA toolkit or LibTorch happens to carry.
#if NCCL_VERSION_CODE != HARNESS_NCCL_VERSION_CODE
#error "nccl.h is not the header of the NCCL that configure found (cmake/nccl.cmake)"
#endif
#endif

namespace harness {

std::string nccl_gpu_sharing_problem(int ranks_per_node, int gpus_per_node) {
  if (gpus_per_node < 0 || ranks_per_node <= gpus_per_node) return "";
  return fmt::format(
      "backend \"nccl\" needs a GPU per rank, and {} ranks on a node whose ranks see {} GPU{} would share one, "
      "which NCCL refuses (\"Duplicate GPU detected\", since NCCL 2.5); expected at most {} rank{} per node "
      "(CUDA_VISIBLE_DEVICES counts), or a backend that stages through the host such as \"allreduce\"",
      ranks_per_node, gpus_per_node, gpus_per_node == 1 ? "" : "s", gpus_per_node, gpus_per_node == 1 ? "" : "s");
}

std::string nccl_problem(const BackendOptions& options) {
  if (options.device != "cuda") {
    return fmt::format("device: backend \"nccl\" reduces GPU memory only; expected \"cuda\", got \"{}\"",
                       options.device);
  }
  if (!options.host_memory_workload.empty()) {
    return fmt::format("workload: backend \"nccl\" reduces GPU memory only, and {} adds up its sums in host "
                       "memory; expected a backend other than \"nccl\" for {}",
                       options.host_memory_workload, options.host_memory_workload);
  }
  const std::string sharing = nccl_gpu_sharing_problem(options.ranks_per_node, options.gpus_per_node);
  if (sharing.empty()) return "";
  return (options.nodes > 1 ? "ranks_per_node: " : "ranks: ") + sharing;
}

#ifdef HARNESS_WITH_NCCL

namespace {

void check_cuda(cudaError_t code, std::string_view operation) { check_cuda_call(code, operation, "nccl: "); }

// NCCL's code and, where it has one, its last message ("Duplicate GPU detected : rank 1 and ...").
std::string nccl_failure(ncclResult_t result, std::string_view operation) {
  const char* last = ncclGetLastError(nullptr);
  return fmt::format("nccl: {} failed: {}{}", operation, ncclGetErrorString(result),
                     last != nullptr && *last != '\0' ? fmt::format(" ({})", last) : "");
}

// Whether `ok` holds on every rank of `communicator` (collective).
bool on_every_rank(bool ok, const Communicator& communicator) {
  int all = ok ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, communicator.handle()), "MPI_Allreduce(nccl check)");
  return all == 1;
}

class NcclAllreduce final : public GradientSync {
 public:
  explicit NcclAllreduce(const Communicator& communicator) {
    try {
      connect(communicator);
    } catch (...) {
      release(/*abort=*/true);
      throw;
    }
  }

  ~NcclAllreduce() override {
    // ncclCommDestroy waits for the peers' outstanding work; during an exception (this rank
    // stops, the others may not) or after a failed call, abort instead.
    release(failed_ || std::uncaught_exceptions() > 0);
  }

  NcclAllreduce(const NcclAllreduce&) = delete;
  NcclAllreduce& operator=(const NcclAllreduce&) = delete;

  std::string_view name() const override { return "nccl"; }

  void allreduce_sum(std::span<float> buffer) override {
    if (buffer.empty()) return;
    // The overlap's communication thread has no current GPU of its own.
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    // The buffer's contents were written by work queued on the legacy default stream (LibTorch's
    // default current stream, cudaMemcpy). The reduction waits for that work through an event,
    // as c10d's ProcessGroupNCCL does, rather than on a blocking stream: kernels queued there
    // later (the rest of backward, with overlap) then need not wait for the reduction.
    check_cuda(cudaEventRecord(ready_, cudaStreamLegacy), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
    const ncclResult_t result =
        ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comm_, stream_);
    if (result != ncclSuccess) {
      failed_ = true;
      throw CommError(nccl_failure(result, "ncclAllReduce"));
    }
    // The contract: the sums are in the buffer when the call returns.
    const cudaError_t synced = cudaStreamSynchronize(stream_);
    if (synced != cudaSuccess) failed_ = true;
    check_cuda(synced, "cudaStreamSynchronize(after ncclAllReduce)");
  }

 private:
  void connect(const Communicator& communicator) {
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    check_gpu_per_rank(communicator);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");

    // Rank 0's id, with whether it could make one, so that every rank stops when it could not.
    struct {
      int result = ncclSuccess;
      ncclUniqueId id{};
    } unique;
    if (communicator.rank() == 0) unique.result = ncclGetUniqueId(&unique.id);
    check_mpi(MPI_Bcast(&unique, sizeof(unique), MPI_BYTE, 0, communicator.handle()), "MPI_Bcast(nccl unique id)");
    if (unique.result != ncclSuccess) {
      throw CommError(fmt::format("nccl: ncclGetUniqueId failed on rank 0: {}",
                                  ncclGetErrorString(static_cast<ncclResult_t>(unique.result))));
    }
    // Collective across the ranks. A rank that fails here throws at once, without waiting for the
    // others: its worker aborts the MPI job, which stops the ranks still inside NCCL.
    ncclComm_t comm = nullptr;
    const ncclResult_t result = ncclCommInitRank(&comm, communicator.size(), unique.id, communicator.rank());
    if (result != ncclSuccess) throw CommError(nccl_failure(result, "ncclCommInitRank"));
    comm_ = comm;
  }

  // One GPU per rank of each node, checked before NCCL is (which would refuse it less clearly),
  // for the points whose GPUs the launcher did not know before launch. Collective.
  static void check_gpu_per_rank(const Communicator& communicator) {
    const NodePlace place = node_place(communicator);
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    const std::string problem = nccl_gpu_sharing_problem(place.local_size, devices);
    if (on_every_rank(problem.empty(), communicator)) return;
    throw NotSupported(problem.empty() ? "ranks: backend \"nccl\" needs a GPU per rank, and another node has "
                                         "more ranks than GPUs (see that node's ranks' logs)"
                                       : "ranks: " + problem);
  }

  void release(bool abort) noexcept {
    if (device_ >= 0) cudaSetDevice(device_);
    if (comm_ != nullptr) {
      if (abort) {
        ncclCommAbort(comm_);
      } else {
        ncclCommDestroy(comm_);
      }
      comm_ = nullptr;
    }
    if (ready_ != nullptr) cudaEventDestroy(ready_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    ready_ = nullptr;
    stream_ = nullptr;
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool failed_ = false;
};

}  // namespace

std::string nccl_unavailable_reason() { return ""; }

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "";
  // Since NCCL 2.9 the code is major * 10000 + minor * 100 + patch (before: major * 1000 + ...).
  return code >= 20900 ? fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100)
                       : fmt::format("{}.{}.{}", code / 1000, code / 100 % 10, code % 100);
}

std::unique_ptr<GradientSync> make_nccl_allreduce(const Communicator& communicator, const BackendOptions& options) {
  if (const std::string problem = nccl_problem(options); !problem.empty()) throw NotSupported(problem);
  return std::make_unique<NcclAllreduce>(communicator);
}

#else  // !HARNESS_WITH_NCCL

std::string nccl_unavailable_reason() {
#ifdef HARNESS_WITH_CUDA
  return "backend \"nccl\" is not in this build: NCCL (nccl.h and libnccl) was not found at configure time; "
         "configure again with -DHARNESS_NCCL_ROOT=<the folder holding include/nccl.h and lib/> (docs/gpus.md)";
#else
  return "backend \"nccl\" is not in this build: it needs a CUDA build with NCCL (configure with "
         "-DHARNESS_WITH_CUDA=ON where a CUDA toolkit and NCCL are installed; docs/gpus.md)";
#endif
}

std::string nccl_version() { return ""; }

std::unique_ptr<GradientSync> make_nccl_allreduce(const Communicator& /*communicator*/,
                                                  const BackendOptions& /*options*/) {
  throw NotSupported(nccl_unavailable_reason());
}

#endif  // HARNESS_WITH_NCCL

}  // namespace harness
