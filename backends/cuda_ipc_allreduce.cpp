#include "backends/cuda_ipc_allreduce.h"

#include <fmt/format.h>

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <vector>

#include "backends/cuda_check.h"
#include "backends/cuda_ipc_arrivals.h"
#include "backends/cuda_ipc_epochs.h"
#include "backends/cuda_ipc_kernels.h"
#include "backends/cuda_ipc_placement.h"
#endif

namespace harness {

std::string cuda_ipc_problem(const BackendOptions& options) {
  if (options.device != "cuda") {
    return fmt::format("device: backend \"cuda_ipc\" reduces GPU memory only; expected \"cuda\", got \"{}\"",
                       options.device);
  }
  if (!options.host_memory_workload.empty()) {
    return fmt::format("workload: backend \"cuda_ipc\" reduces GPU memory only, and {} adds up its sums in host "
                       "memory; expected a backend other than \"cuda_ipc\" for {}",
                       options.host_memory_workload, options.host_memory_workload);
  }
  if (options.nodes > 1) {
    return fmt::format("nodes: backend \"cuda_ipc\" needs every rank on one node (CUDA IPC maps GPU memory between "
                       "the processes of one machine), got {} nodes; expected nodes 1, or a backend that stages "
                       "through the host such as \"hier\"",
                       options.nodes);
  }
  return "";
}

#ifdef HARNESS_WITH_CUDA

namespace {

void check_cuda(cudaError_t code, std::string_view operation) { check_cuda_call(code, operation, "cuda_ipc: "); }

// Regions start on 256-byte boundaries (cudaMalloc's alignment): 64 floats. Each rank's buffer
// starts with its arrival slots on the stream (cuda_ipc_arrivals.h), then the one-shot kernel's
// flags (one_shot_with_arrival), then the regions, each on such a boundary.
constexpr std::size_t kRegionAlignment = 64;
// How long registration waits for its round of arrivals on the stream (StreamArrivals::prove):
// the ranks queue it at once, after a collective, so on GPUs where waits work it takes
// microseconds; a time slice of another process without MPS is milliseconds.
constexpr std::chrono::milliseconds kArrivalProofTimeout{5000};

constexpr std::size_t round_up(std::size_t count, std::size_t multiple) {
  return (count + multiple - 1) / multiple * multiple;
}

class CudaIpcAllreduce final : public GradientSync {
 public:
  CudaIpcAllreduce(const Communicator& communicator, std::size_t one_shot_below_bytes, bool device_arrivals)
      : communicator_(communicator),
        one_shot_below_bytes_(one_shot_below_bytes),
        device_arrivals_(device_arrivals),
        kernel_arrivals_(device_arrivals),
        arrivals_(communicator_) {
    try {
      set_up();
    } catch (...) {
      release(/*orderly=*/false);
      throw;
    }
  }

  ~CudaIpcAllreduce() override {
    // After a failed call, or while this rank unwinds an exception, its peers may not come to a
    // last arrival: release without one (and keep this rank's buffer, which they may still map).
    release(!in_call_ && std::uncaught_exceptions() == 0);
  }

  CudaIpcAllreduce(const CudaIpcAllreduce&) = delete;
  CudaIpcAllreduce& operator=(const CudaIpcAllreduce&) = delete;

  std::string_view name() const override { return "cuda_ipc"; }

  void allreduce_sum(std::span<float> buffer) override {
    const std::size_t count = buffer.size();
    if (count == 0 || communicator_.size() == 1) return;
    in_call_ = true;  // until the call ends well: see the destructor
    // The overlap's communication thread has no current GPU of its own.
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    // Before any wait is queued on the GPU: ranks that disagree stop here, all of them, rather than
    // wait for each other's flags (host arrivals check it at their first arrival, registration at
    // its own).
    if (count > capacity_) {
      register_buffers(count);
    } else if (device_arrivals_ || one_kernel(count)) {
      agree_on_count(count);
    }
    const std::size_t region = calls_ % 2;
    ++calls_;
    float* mine = own_ + header_floats_ + region * capacity_;
    const float* const* sources = region_pointers_ + region * static_cast<std::size_t>(communicator_.size());

    // The buffer was written by work queued on the legacy default stream (LibTorch's default
    // stream, cudaMemcpy): this stream waits for it through an event, as nccl's does.
    check_cuda(cudaEventRecord(ready_, cudaStreamLegacy), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, ready_, 0), "cudaStreamWaitEvent");
    const int ranks = communicator_.size();
    const bool one_shot = count * sizeof(float) < one_shot_below_bytes_;
    if (one_kernel(count)) {
      // Small buffers: copy-in, arrival and sum in one kernel (one GPU operation instead of four;
      // the latency is the point there). Its blocks spin only for peers that the host check above
      // has seen at this call already.
      const cuda_ipc::BlockEpochs epochs = block_epochs_.next(cuda_ipc::one_kernel_blocks(count));
      check_cuda(cuda_ipc::one_shot_with_arrival(buffer.data(), sources, ranks, communicator_.rank(), flag_pointers_,
                                                 epochs, count, stream_),
                 "one-shot kernel with arrivals");
      finish_call();
      return;
    }
    check_cuda(cudaMemcpyAsync(mine, buffer.data(), count * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
               "cudaMemcpyAsync(into the registered buffer)");
    arrive(count);  // every rank's input is in its region

    if (one_shot) {
      check_cuda(cuda_ipc::sum_over_ranks(sources, ranks, buffer.data(), 0, count, stream_), "one-shot kernel");
    } else {
      const auto rank = static_cast<std::size_t>(communicator_.rank());
      const auto size = static_cast<std::size_t>(ranks);
      check_cuda(cuda_ipc::sum_over_ranks(sources, ranks, mine, count * rank / size, count * (rank + 1) / size,
                                          stream_),
                 "reduce-scatter kernel");
      arrive(count);  // every slice is summed
      check_cuda(cuda_ipc::gather_slices(sources, ranks, buffer.data(), count, stream_), "all-gather kernel");
    }
    finish_call();
  }

 private:
  // Whether a call of `count` elements is one kernel, arrivals included (small one-shot calls).
  // It uses no stream memory operations, so it stays on where the driver refuses them; not where
  // a wait on the stream did not see a peer's write (the kernel's flags cross the same way).
  bool one_kernel(std::size_t count) const {
    return kernel_arrivals_ && count * sizeof(float) < one_shot_below_bytes_ &&
           count <= cuda_ipc::kOneShotWithArrivalMaxCount;
  }

  void finish_call() {
    // The contract: the sums are in the buffer when the call returns.
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(after the reduction)");
    in_call_ = false;
  }

  void set_up() {
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    cuda_ipc::check_one_node(communicator_);
    const std::string problem = cuda_ipc::peer_access_problem(communicator_, device_);
    if (!cuda_ipc::on_every_rank(problem.empty(), communicator_)) {
      throw NotSupported(problem.empty() ? "ranks: backend \"cuda_ipc\" needs ranks on one GPU or on GPUs with peer "
                                           "access, and another rank's GPU has none (see that rank's log)"
                                         : problem);
    }
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    bases_.assign(static_cast<std::size_t>(communicator_.size()), nullptr);
    arrival_floats_ = cuda_ipc::arrival_slot_floats(communicator_.size(), kRegionAlignment);
    header_floats_ = arrival_floats_ + round_up(cuda_ipc::kOneShotWithArrivalBlocks * bases_.size(), kRegionAlignment);
  }

  // The barrier between phases: every rank's work queued so far is done before this rank's next.
  void arrive(std::size_t count) {
    if (device_arrivals_) {
      arrive_on_stream();
    } else {
      arrive_on_host(count);
    }
  }

  // On the GPU (cuda_ipc_arrivals.h): the host queues them and goes on, no round trip through it.
  void arrive_on_stream() { arrivals_.arrive(stream_); }

  // On the host: this rank's queued work is done, and every rank has come as far (an MPI
  // reduction, which also checks the element counts).
  void arrive_on_host(std::size_t count) {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    agree_on_count(count);
  }

  // Every rank reduces `count` elements, or every rank throws: ranks that disagreed would read
  // each other's regions past their end.
  void agree_on_count(std::size_t count) {
    int64_t largest_and_negated_smallest[2] = {static_cast<int64_t>(count), -static_cast<int64_t>(count)};
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, largest_and_negated_smallest, 2, MPI_INT64_T, MPI_MAX,
                            communicator_.handle()),
              "MPI_Allreduce(cuda_ipc arrival)");
    if (largest_and_negated_smallest[0] != -largest_and_negated_smallest[1]) {
      throw CommError(fmt::format("cuda_ipc: ranks disagree on the buffer to reduce, from {} to {} elements; every "
                                  "rank must pass the same element count",
                                  -largest_and_negated_smallest[1], largest_and_negated_smallest[0]));
    }
  }

  // Replaces the registered buffers by ones with regions of at least `count` floats, on every
  // rank at once (collective; every rank asks for the same count, which arrive_on_host() checks).
  void register_buffers(std::size_t count) {
    arrive_on_host(count);  // every rank is done with the old buffers
    close_peer_mappings();
    arrive_on_host(count);  // nobody maps them any more
    free_own_buffers();

    capacity_ = round_up(count, kRegionAlignment);
    struct {
      int ok = 0;
      cudaIpcMemHandle_t handle{};
    } mine;
    void* allocation = nullptr;
    cudaError_t allocated = cudaMalloc(&allocation, (header_floats_ + 2 * capacity_) * sizeof(float));
    if (allocated == cudaSuccess) {
      own_ = static_cast<float*>(allocation);
      // The arrival flags start at epoch 0 on every rank, before any peer maps them.
      allocated = cudaMemset(own_, 0, header_floats_ * sizeof(float));
      if (allocated == cudaSuccess) allocated = cudaDeviceSynchronize();
      if (allocated == cudaSuccess) allocated = cudaIpcGetMemHandle(&mine.handle, own_);
    }
    mine.ok = allocated == cudaSuccess ? 1 : 0;
    std::vector<decltype(mine)> all(static_cast<std::size_t>(communicator_.size()));
    check_mpi(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, communicator_.handle()),
              "MPI_Allgather(cuda_ipc handles)");
    for (std::size_t rank = 0; rank < all.size(); ++rank) {
      if (all[rank].ok != 0) continue;
      capacity_ = 0;
      throw CommError(static_cast<int>(rank) == communicator_.rank()
                          ? fmt::format("cuda_ipc: cudaMalloc or cudaIpcGetMemHandle of 2 x {} floats failed: {}",
                                        count, cudaGetErrorString(allocated))
                          : fmt::format("cuda_ipc: rank {} could not allocate and export its buffer (see its log)",
                                        rank));
    }

    std::string failure;
    for (std::size_t rank = 0; rank < all.size(); ++rank) {
      if (static_cast<int>(rank) == communicator_.rank()) {
        bases_[rank] = own_;
        continue;
      }
      void* mapped = nullptr;
      const cudaError_t opened = cudaIpcOpenMemHandle(&mapped, all[rank].handle, cudaIpcMemLazyEnablePeerAccess);
      if (opened != cudaSuccess) {
        failure = fmt::format("cuda_ipc: cudaIpcOpenMemHandle of rank {}'s buffer failed: {}", rank,
                              cudaGetErrorString(opened));
        break;
      }
      bases_[rank] = static_cast<float*>(mapped);
    }
    // Where each rank's region k lies, as this rank's kernels address it: region k of rank r at
    // index k * ranks + r.
    std::vector<const float*> pointers;
    for (std::size_t region = 0; region < 2 && failure.empty(); ++region) {
      for (float* base : bases_) pointers.push_back(base + header_floats_ + region * capacity_);
    }
    // Where each rank's flags for the one-shot kernel's arrivals lie, rank r's at index r; its
    // arrival slots on the stream come first.
    std::vector<std::uint32_t*> flags;
    std::vector<std::uint32_t*> slots;
    for (float* base : bases_) {
      flags.push_back(reinterpret_cast<std::uint32_t*>(base + arrival_floats_));
      slots.push_back(reinterpret_cast<std::uint32_t*>(base));
    }
    // The kernels move 16 bytes at once from element 0 of each region (cuda_ipc_vectors.h).
    for (const float* pointer : pointers) {
      if (reinterpret_cast<std::uintptr_t>(pointer) % 16 != 0) failure = "cuda_ipc: a region is not 16-byte aligned";
    }
    if (failure.empty()) {
      const cudaError_t copied = copy_to_device(pointers, region_pointers_);
      if (copied != cudaSuccess) failure = fmt::format("cuda_ipc: the region table: {}", cudaGetErrorString(copied));
    }
    if (failure.empty()) {
      const cudaError_t copied = copy_to_device(flags, flag_pointers_);
      if (copied != cudaSuccess) failure = fmt::format("cuda_ipc: the flag table: {}", cudaGetErrorString(copied));
    }
    if (!cuda_ipc::on_every_rank(failure.empty(), communicator_)) {
      capacity_ = 0;
      throw CommError(failure.empty() ? "cuda_ipc: another rank could not map the registered buffers (see its log)"
                                      : failure);
    }
    // The flags start at 0 (above), as the epochs count.
    block_epochs_ = cuda_ipc::BlockEpochCounter();
    arrivals_.bind(std::move(slots));
    if (device_arrivals_) prove_stream_arrivals();
  }

  // Arrivals on the stream only once a round of them has run between these ranks, within a time
  // limit (StreamArrivals::prove); on every rank alike.
  void prove_stream_arrivals() {
    const cuda_ipc::ArrivalProof proof = arrivals_.prove(stream_, kArrivalProofTimeout);
    const cuda_ipc::ArrivalModes modes = cuda_ipc::arrival_modes(device_arrivals_, proof);
    device_arrivals_ = modes.on_stream;
    kernel_arrivals_ = kernel_arrivals_ && modes.in_kernel;
    if (proof == cuda_ipc::ArrivalProof::kWorks || communicator_.rank() != 0) return;
    fmt::print(stderr, "harness: cuda_ipc: {}; its ranks arrive through the host instead{}\n",
               proof == cuda_ipc::ArrivalProof::kRefused
                   ? "this driver cannot queue waits on the GPU (cuStreamWaitValue32)"
                   : fmt::format("a wait on the GPU did not see a peer's write within {} ms (cuStreamWaitValue32)",
                                 kArrivalProofTimeout.count()),
               kernel_arrivals_ ? " (small one-shot calls still arrive in their kernel)" : ", every call");
  }

  void close_peer_mappings() noexcept {
    for (std::size_t rank = 0; rank < bases_.size(); ++rank) {
      if (static_cast<int>(rank) != communicator_.rank() && bases_[rank] != nullptr) cudaIpcCloseMemHandle(bases_[rank]);
      bases_[rank] = nullptr;
    }
  }

  // A new device array holding `values` in `table` (cudaFree'd by free_own_buffers).
  template <typename Pointer>
  static cudaError_t copy_to_device(const std::vector<Pointer>& values, Pointer*& table) {
    void* allocation = nullptr;
    cudaError_t status = cudaMalloc(&allocation, values.size() * sizeof(Pointer));
    if (status != cudaSuccess) return status;
    table = static_cast<Pointer*>(allocation);
    return cudaMemcpy(allocation, values.data(), values.size() * sizeof(Pointer), cudaMemcpyHostToDevice);
  }

  void free_own_buffers() noexcept {
    if (own_ != nullptr) cudaFree(own_);
    if (region_pointers_ != nullptr) cudaFree(region_pointers_);
    if (flag_pointers_ != nullptr) cudaFree(flag_pointers_);
    own_ = nullptr;
    region_pointers_ = nullptr;
    flag_pointers_ = nullptr;
    capacity_ = 0;
  }

  // `orderly`: every rank releases together, so this rank may free its buffer once the others
  // have unmapped it. Otherwise the buffer stays allocated until the process ends (the driver
  // frees it then), since a peer may still map it.
  void release(bool orderly) noexcept {
    if (device_ >= 0) cudaSetDevice(device_);
    // This rank's kernels no longer read its peers' buffers (unless its stream waits for good).
    if (stream_ != nullptr && !arrivals_.stuck()) cudaStreamSynchronize(stream_);
    close_peer_mappings();
    if (orderly && own_ != nullptr && MPI_Barrier(communicator_.handle()) == MPI_SUCCESS) free_own_buffers();
    if (ready_ != nullptr) cudaEventDestroy(ready_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    ready_ = nullptr;
    stream_ = nullptr;
  }

  Communicator communicator_;
  std::size_t one_shot_below_bytes_;
  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  bool device_arrivals_;  // arrive on the GPU's stream (arrive_on_stream), else on the host
  bool kernel_arrivals_;  // small one-shot calls are one kernel (one_kernel)
  cuda_ipc::StreamArrivals arrivals_;
  cuda_ipc::BlockEpochCounter block_epochs_;  // the one-kernel path's, since the buffers were registered
  std::size_t arrival_floats_ = 0;            // the arrival slots at the start of each rank's buffer
  std::size_t header_floats_ = 0;             // the slots and flags before each rank's regions
  float* own_ = nullptr;                      // this rank's buffer: slots, flags, two regions of capacity_ floats
  std::size_t capacity_ = 0;                  // floats per region, the same on every rank
  std::vector<float*> bases_;                 // every rank's buffer (slots first), this rank's own at its index
  const float** region_pointers_ = nullptr;   // device memory: 2 x ranks region addresses
  std::uint32_t** flag_pointers_ = nullptr;   // device memory: every rank's one-shot arrival flags
  uint64_t calls_ = 0;
  bool in_call_ = false;
};

}  // namespace

std::string cuda_ipc_unavailable_reason() { return ""; }

std::unique_ptr<GradientSync> make_cuda_ipc_allreduce(const Communicator& communicator, const BackendOptions& options,
                                                      std::size_t one_shot_below_bytes, bool device_arrivals) {
  if (const std::string problem = cuda_ipc_problem(options); !problem.empty()) throw NotSupported(problem);
  return std::make_unique<CudaIpcAllreduce>(communicator, one_shot_below_bytes, device_arrivals);
}

#else  // !HARNESS_WITH_CUDA

std::string cuda_ipc_unavailable_reason() {
  return "backend \"cuda_ipc\" is not in this build: it needs a CUDA build (configure with -DHARNESS_WITH_CUDA=ON "
         "where a CUDA toolkit is installed; docs/gpus.md)";
}

std::unique_ptr<GradientSync> make_cuda_ipc_allreduce(const Communicator& /*communicator*/,
                                                      const BackendOptions& /*options*/,
                                                      std::size_t /*one_shot_below_bytes*/,
                                                      bool /*device_arrivals*/) {
  throw NotSupported(cuda_ipc_unavailable_reason());
}

#endif  // HARNESS_WITH_CUDA

}  // namespace harness
