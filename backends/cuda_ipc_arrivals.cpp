#ifdef HARNESS_WITH_CUDA
#include "backends/cuda_ipc_arrivals.h"

#include <fmt/format.h>

#include <string>

#include "backends/cuda_stream_wait.h"
#include "harness/common/errors.h"

namespace harness::cuda_ipc {
namespace {

// The epoch of prove()'s round: the slots hold 0 after a registration.
constexpr std::uint32_t kProofEpoch = 1;

void check_driver(CUresult result, std::string_view operation) {
  if (result != CUDA_SUCCESS) {
    throw CommError(fmt::format("cuda_ipc: {} failed: CUDA driver error {}", operation, static_cast<int>(result)));
  }
}

// The largest of every rank's `value` (collective).
int largest_on_any_rank(int value, const Communicator& communicator) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, communicator.handle()),
            "MPI_Allreduce(cuda_ipc arrivals)");
  return value;
}

// What a rank found, worst last: the largest over the ranks is what all of them report. A wait
// that did not see a peer's write is worse than one the driver refused: the writes crossed the
// same way as the one-kernel path's flags do, which then stays off too.
enum Finding : int { kSeen = 0, kNotQueued = 1, kNotSeen = 2, kFault = 3 };

}  // namespace

std::size_t arrival_slot_floats(int ranks, std::size_t alignment) {
  const auto count = static_cast<std::size_t>(ranks < 1 ? 1 : ranks);
  return (count + alignment - 1) / alignment * alignment;
}

StreamArrivals::StreamArrivals(const Communicator& communicator)
    : communicator_(communicator), operations_(StreamMemoryOperations::found()) {}

void StreamArrivals::bind(std::vector<std::uint32_t*> slots) {
  slots_ = std::move(slots);
  epoch_ = 0;
}

ArrivalProof StreamArrivals::prove(cudaStream_t stream, std::chrono::milliseconds timeout) {
  const auto me = static_cast<std::size_t>(communicator_.rank());
  const std::size_t ranks = slots_.size();
  // Tell every peer first; nothing waits yet, so ranks whose driver refuses can still all stop.
  bool queued = operations_.usable();
  for (std::size_t peer = 0; queued && peer < ranks; ++peer) {
    if (peer == me) continue;
    queued = operations_.write_value(stream, device_address(slot(peer, me)), kProofEpoch,
                                     CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS;
  }
  if (!queued) cudaGetLastError();  // not sticky; clear it
  if (largest_on_any_rank(queued ? kSeen : kNotQueued, communicator_) != kSeen) {
    // Whatever this rank queued of its writes lands in its peers' slots, which no one reads now.
    return ArrivalProof::kRefused;
  }
  bool waiting = true;
  for (std::size_t peer = 0; waiting && peer < ranks; ++peer) {
    if (peer == me) continue;
    waiting = operations_.wait_value(stream, device_address(slot(me, peer)), kProofEpoch, CU_STREAM_WAIT_VALUE_GEQ) ==
              CUDA_SUCCESS;
  }
  if (!waiting) cudaGetLastError();
  // Every rank has written to its peers, so on a GPU where waits see them this is done at once.
  const WaitOutcome seen = wait_for_cuda_stream(stream, {}, timeout);
  Finding finding = !waiting ? kNotQueued : seen.done() ? kSeen : kNotSeen;
  std::string fault;
  if (seen.kind == WaitOutcome::Kind::kFailed) {
    finding = kFault;
    fault = fmt::format(
        "cuda_ipc: the GPU failed while its stream waited for the peers' arrivals "
        "(cuStreamWaitValue32): {}",
        seen.reason);
  } else if (seen.kind == WaitOutcome::Kind::kTimedOut) {
    // Release this rank's own waits: its slots are its own memory, written from its host.
    const std::vector<std::uint32_t> proof(ranks, kProofEpoch);
    const cudaError_t written =
        cudaMemcpy(slot(me, 0), proof.data(), ranks * sizeof(std::uint32_t), cudaMemcpyHostToDevice);
    const WaitOutcome released = written == cudaSuccess ? wait_for_cuda_stream(stream, {}, timeout) : seen;
    if (!released.done()) {
      stuck_ = true;
      finding = kFault;
      fault = fmt::format(
          "cuda_ipc: this rank's stream still waited for its peers' arrivals after {} ms, and after "
          "this rank wrote its own slots itself ({}); expected cuda_ipc_device_arrivals false here",
          2 * timeout.count(), written == cudaSuccess ? released.reason : cudaGetErrorString(written));
    }
  }
  const int worst = largest_on_any_rank(finding, communicator_);
  if (worst == kFault) {
    throw CommError(fault.empty() ? "cuda_ipc: another rank's GPU failed in its arrivals at registration (see its log)"
                                  : fault);
  }
  epoch_ = kProofEpoch;
  return worst == kSeen ? ArrivalProof::kWorks : worst == kNotSeen ? ArrivalProof::kUnseen : ArrivalProof::kRefused;
}

void StreamArrivals::arrive(cudaStream_t stream) {
  ++epoch_;
  const auto me = static_cast<std::size_t>(communicator_.rank());
  for (std::size_t peer = 0; peer < slots_.size(); ++peer) {
    if (peer == me) continue;
    check_driver(operations_.write_value(stream, device_address(slot(peer, me)), epoch_, CU_STREAM_WRITE_VALUE_DEFAULT),
                 "cuStreamWriteValue32(arrival)");
  }
  for (std::size_t peer = 0; peer < slots_.size(); ++peer) {
    if (peer == me) continue;
    // GEQ compares cyclically ((int32_t)(slot - epoch) >= 0): a peer already at its next arrival
    // counts; it can be no further ahead, since that arrival waits for this rank's.
    check_driver(operations_.wait_value(stream, device_address(slot(me, peer)), epoch_, CU_STREAM_WAIT_VALUE_GEQ),
                 "cuStreamWaitValue32(arrival)");
  }
}

}  // namespace harness::cuda_ipc

#endif  // HARNESS_WITH_CUDA
