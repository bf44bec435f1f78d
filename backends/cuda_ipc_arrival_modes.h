// Where backend cuda_ipc's ranks arrive (cuda_ipc_allreduce.h), from the setting
// cuda_ipc_device_arrivals and what registration's round of arrivals on the stream showed
// (StreamArrivals::prove, cuda_ipc_arrivals.h). A pure function in every build, so that the rule
// is tested where no GPU is.
#pragma once

namespace harness::cuda_ipc {

// What one round of arrivals at registration showed (the same on every rank).
enum class ArrivalProof {
  kWorks,    // every rank's waits saw every peer's write
  kRefused,  // the driver refused to queue the operations on some rank
  kUnseen,   // some rank's wait did not see a peer's write within the timeout
};

struct ArrivalModes {
  bool on_stream = false;  // arrivals between phases on the GPU's stream (else through the host)
  bool in_kernel = false;  // small one-shot calls are one kernel whose blocks arrive by flags
};

// With the setting off, everything goes through the host. The one-kernel path uses no stream
// memory operations, so where the driver refused only those it stays on; where a wait did not see
// a peer's write, the kernel's flags (which cross between the processes the same way) are not
// trusted either.
constexpr ArrivalModes arrival_modes(bool device_arrivals_setting, ArrivalProof proof) {
  if (!device_arrivals_setting) return {false, false};
  switch (proof) {
    case ArrivalProof::kWorks:
      return {true, true};
    case ArrivalProof::kRefused:
      return {false, true};
    case ArrivalProof::kUnseen:
      break;
  }
  return {false, false};
}

}  // namespace harness::cuda_ipc
