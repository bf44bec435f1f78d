#include "backends/nccl_allreduce.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_NCCL
#include <cuda_runtime_api.h>

#include "backends/cuda_check.h"
#include "backends/cuda_stream_wait.h"
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

std::string nccl_shared_gpu_problem(const std::vector<RankGpuPlace>& places) {
  const auto same_gpu = [](const RankGpuPlace& a, const RankGpuPlace& b) {
    return a.host == b.host && a.pci_bus_id.size() == b.pci_bus_id.size() &&
           std::equal(a.pci_bus_id.begin(), a.pci_bus_id.end(), b.pci_bus_id.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (std::size_t second = 1; second < places.size(); ++second) {
    for (std::size_t first = 0; first < second; ++first) {
      if (!same_gpu(places[first], places[second])) continue;
      return fmt::format(
          "backend \"nccl\" needs a GPU per rank, and ranks {} and {} on host {} share GPU {} (its PCI bus id), "
          "which NCCL refuses (\"Duplicate GPU detected\", since NCCL 2.5); expected each rank of a node on a GPU "
          "of its own (CUDA_VISIBLE_DEVICES, SLURM's --gpus-per-task), or a backend that stages through the host "
          "such as \"allreduce\"",
          first, second, places[second].host, places[second].pci_bus_id);
    }
  }
  return "";
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
std::string nccl_reason(ncclResult_t result, std::string_view operation) {
  const char* last = ncclGetLastError(nullptr);
  return fmt::format("{} failed: {}{}", operation, ncclGetErrorString(result),
                     last != nullptr && *last != '\0' ? fmt::format(" ({})", last) : "");
}

std::string nccl_failure(ncclResult_t result, std::string_view operation) {
  return "nccl: " + nccl_reason(result, operation);
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
    // The contract: the sums are in the buffer when the call returns. Polled, not waited for in
    // cudaStreamSynchronize: an error that NCCL finds while the reduction runs (a peer gone, a
    // network fault) leaves the stream waiting forever; it is reported here instead, and the
    // communicator is aborted so that nothing of it keeps waiting.
    const WaitOutcome waited = wait_for_cuda_stream(stream_, [this] { return async_failure(); });
    if (!waited.done()) {
      failed_ = true;
      abort_communicator();
      throw CommError("nccl: " + waited.reason);
    }
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
  // for the points whose GPUs the launcher did not know before launch: by the GPUs' PCI bus ids,
  // which every rank gathers, so that all throw or none. Collective.
  void check_gpu_per_rank(const Communicator& communicator) const {
    constexpr std::size_t kBusIdLength = 32;  // "0000:2A:00.0" and its terminator, with room to spare
    char mine[kBusIdLength] = {};
    const cudaError_t named = cudaDeviceGetPCIBusId(mine, sizeof mine, device_);
    if (named != cudaSuccess) {
      cudaGetLastError();  // not sticky; clear it
      mine[0] = '\0';      // every rank learns below that this one could not name its GPU
    }
    mine[kBusIdLength - 1] = '\0';
    std::vector<char> all(kBusIdLength * static_cast<std::size_t>(communicator.size()));
    check_mpi(MPI_Allgather(mine, kBusIdLength, MPI_CHAR, all.data(), kBusIdLength, MPI_CHAR, communicator.handle()),
              "MPI_Allgather(nccl GPUs)");
    const std::vector<std::string> hosts = all_host_names(communicator);
    std::vector<RankGpuPlace> places;
    for (int rank = 0; rank < communicator.size(); ++rank) {
      const std::string bus_id(all.data() + kBusIdLength * static_cast<std::size_t>(rank));
      if (bus_id.empty()) {
        throw CommError(
            rank == communicator.rank()
                ? fmt::format("nccl: cudaDeviceGetPCIBusId failed: {}", cudaGetErrorString(named))
                : fmt::format("nccl: rank {} could not name its GPU (cudaDeviceGetPCIBusId; see its log)", rank));
      }
      places.push_back({hosts[static_cast<std::size_t>(rank)], bus_id});
    }
    if (const std::string problem = nccl_shared_gpu_problem(places); !problem.empty()) {
      throw NotSupported("ranks: " + problem);
    }
  }

  // NCCL's error found while the work it queued runs, or "".
  std::string async_failure() const {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t asked = ncclCommGetAsyncError(comm_, &async);
    if (asked != ncclSuccess) return nccl_reason(asked, "ncclCommGetAsyncError");
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
    if (async == ncclInProgress) return "";  // a non-blocking communicator's work under way
#endif
    return async == ncclSuccess ? "" : nccl_reason(async, "ncclAllReduce (reported while it ran)");
  }

  // Stops the communicator's work without waiting for the peers; the stream's NCCL kernels end.
  void abort_communicator() noexcept {
    if (comm_ == nullptr) return;
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  void release(bool abort) noexcept {
    if (device_ >= 0) cudaSetDevice(device_);
    if (abort) abort_communicator();
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    comm_ = nullptr;
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
