// Where backend `cuda_ipc` may run, checked when it is made (cuda_ipc_allreduce.h): every rank
// on one node, and every pair of ranks on one GPU or on GPUs with peer access. CUDA builds only
// (HARNESS_WITH_CUDA); collective over the communicator, like the backend.
#pragma once

#include <string>

#include "backends/communicator.h"

namespace harness::cuda_ipc {

// Whether `ok` holds on every rank of `communicator` (collective).
bool on_every_rank(bool ok, const Communicator& communicator);

// Stops every rank with NotSupported when the ranks span several nodes (collective).
void check_one_node(const Communicator& communicator);

// Why this rank cannot map the buffers of the GPUs its peers use, or "": a peer on the same GPU
// is always fine, one on another GPU needs peer access to it (collective: gathers every rank's
// GPU; `device` is this rank's).
std::string peer_access_problem(const Communicator& communicator, int device);

}  // namespace harness::cuda_ipc
