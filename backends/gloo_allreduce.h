// `gloo`: the collective library under PyTorch DistributedDataParallel on CPU, through
// LibTorch's c10d::ProcessGroupGloo (compiled into Debian's libtorch_cpu; its headers need
// libgloo-dev). It lets a study compare MPI with what PyTorch itself uses, in one harness.
//
// Rendezvous: rank 0 starts a c10d TCPStore on an ephemeral port and sends the port to the other
// ranks over MPI; Gloo then opens its own TCP connections between the ranks. When every rank runs
// on one host, store and transport use the loopback address; otherwise the store listens on rank
// 0's host name and each rank's transport binds to its own host name.
#pragma once

#include <memory>

#include "backends/gradient_sync.h"

namespace harness {

// True when this build has the gloo backend (libgloo-dev headers were found at configure time).
// Defined in gloo_available.cpp, which needs no LibTorch: the orchestrator asks it too.
bool gloo_available();

// Throws NotSupported when !gloo_available(), CommError when the rendezvous fails.
std::unique_ptr<GradientSync> make_gloo_allreduce(const Communicator& communicator);

}  // namespace harness
