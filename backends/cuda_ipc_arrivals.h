// Backend cuda_ipc's arrivals on the GPU's stream (cuda_ipc_allreduce.h): each rank's stream tells
// every peer that its earlier work is done by writing the next epoch into a slot of the peer's
// buffer (cuStreamWriteValue32, which fences that work first), then waits until every peer has
// written it into a slot of its own (cuStreamWaitValue32: cuda_stream_memory.h). A rank waits on
// its own memory only, so that it can always release its own waits: prove() relies on that.
// CUDA builds only (HARNESS_WITH_CUDA).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "backends/communicator.h"
#include "backends/cuda_ipc_arrival_modes.h"  // ArrivalProof
#include "backends/cuda_stream_memory.h"

namespace harness::cuda_ipc {

// Floats at the start of each rank's buffer for its arrival slots: one 32-bit slot per rank (slot
// q is written by rank q), padded to a multiple of `alignment` floats.
std::size_t arrival_slot_floats(int ranks, std::size_t alignment);

class StreamArrivals {
 public:
  // Looks the driver's operations up (nothing is queued yet).
  explicit StreamArrivals(const Communicator& communicator);

  // Every rank's slots (arrival_slot_floats at the start of its buffer, set to 0 before any peer
  // maps it), this rank's own at its index, after each registration; the epoch starts again.
  void bind(std::vector<std::uint32_t*> slots);

  // One round of arrivals on `stream` (epoch 1), waited for from the host for at most `timeout`:
  // ranks on separate GPUs had never run them, and a wait that never sees its peer's write would
  // hold the stream forever. Where a wait does not see it in time, the rank writes its own slots
  // itself (its own memory, from the host) to release its stream. Collective: every rank returns
  // the same. Throws CommError on every rank when a GPU faulted (the fault sticks to its context).
  ArrivalProof prove(cudaStream_t stream, std::chrono::milliseconds timeout);

  // Queues this rank's next arrival on `stream` (after prove() said kWorks): every rank's work
  // queued before it is done before this rank's work queued after it. Throws CommError when the
  // driver refuses an operation.
  void arrive(cudaStream_t stream);

  // Whether prove() left `stream` waiting for good (its own write did not release it): nothing
  // may wait for that stream any more.
  bool stuck() const { return stuck_; }

 private:
  std::uint32_t* slot(std::size_t owner, std::size_t writer) const { return slots_[owner] + writer; }

  const Communicator& communicator_;
  StreamMemoryOperations operations_;
  std::vector<std::uint32_t*> slots_;
  std::uint32_t epoch_ = 0;
  bool stuck_ = false;
};

}  // namespace harness::cuda_ipc
