// `cuda_ipc`: an allreduce in GPU memory between the ranks of one node, through CUDA IPC: the GPU
// counterpart of `shm`. It works where NCCL does not, for ranks that share one GPU (NCCL refuses
// them), and for ranks on different GPUs with peer access. The design is vLLM's custom
// all-reduce and FlashInfer's IPC all-reduce (buffers mapped once, a one-shot and a two-shot
// reduction); the code is the harness's own.
//
// Registration, once per point (and again only when a larger buffer arrives, on every rank at
// once): every rank allocates one device buffer (cudaMalloc) of two regions, each as large as the
// largest buffer reduced so far, and the ranks exchange its CUDA IPC handle (cudaIpcGetMemHandle)
// over MPI; each rank then maps its peers' buffers (cudaIpcOpenMemHandle). Its own is used as it
// is.
//
// Each call (allreduce_sum on a span of device memory, as the device path hands it):
//   1. copy the caller's buffer into this call's region of this rank's buffer (device to device);
//   2. arrive: every rank's input is in its region;
//   3. one-shot, for buffers below the crossover (cuda_ipc_one_shot_below_bytes): one kernel on
//      each rank sums the whole buffer over every rank's region and writes it into the caller's
//      buffer. Two-shot otherwise: each rank's kernel sums its slice (elements
//      [n r / p, n (r + 1) / p) of n, p ranks) over every rank's region into its own region
//      (reduce-scatter); arrive: every slice is summed; one kernel copies every rank's summed slice
//      into the caller's buffer (all-gather).
// Every element is summed in rank order 0, 1, ..., p-1, in either kernel, so every rank gets the
// same bits, one-shot or two-shot. Device memory moved per rank, in units of the buffer's size n:
// one-shot (p + 3) n (copy in 2 n, read p n, write n), two-shot (5 + 1/p) n (copy in 2 n; read n,
// write n/p; read n, write n). Ranks that share a GPU share its memory bandwidth too.
//
// Calls alternate between the two regions, so no arrival is needed at the end of a call: a rank
// writes region k % 2 again only in call k + 2, after the arrival of call k + 1, which every rank
// reaches only once it has finished reading in call k.
//
// Arrivals (cuda_ipc_device_arrivals, true by default) are queued on the GPU: each rank's stream
// writes the next epoch into a slot of every peer's buffer once its earlier work is done, then
// waits until every peer has written it into a slot of its own (cuStreamWriteValue32 and
// cuStreamWaitValue32, the driver's stream memory operations: cuda_ipc_arrivals.h). The host
// queues them and goes on, so a one-shot call makes one round trip through the host (its end)
// instead of two. The waits are carried out by the GPU's front end, not by kernels spinning on SMs
// (vLLM's flags), so they need no two processes' kernels resident at once and cannot deadlock
// ranks that time-slice one GPU without MPS. Each call first checks on the host (an MPI reduction)
// that every rank reduces the same number of elements, so that ranks which disagree all stop
// instead of waiting on the GPU for each other. Each registration proves them first: one round,
// waited for from the host for at most 5 s (ranks on separate GPUs had never run them); a rank
// whose wait did not see a peer's write releases its own stream by writing its own slots. Where
// the driver refuses stream memory operations, where the round was not seen in time, or with
// cuda_ipc_device_arrivals false, arrivals are host-synchronised: cudaStreamSynchronize, then an
// MPI_Allreduce over the ranks.
// Small one-shot calls (up to cuda_ipc::kOneShotWithArrivalMaxCount elements) are one kernel
// instead of a copy, a flag write, a wait and a kernel: each block copies its elements in, tells
// every rank, spins until every rank's same block has told it, and sums (vLLM's flags,
// cuda_ipc_kernels.h). Each block compares epochs of its own (cuda_ipc_epochs.h), so no flag a
// block left calls ago can read as ahead. The kernel uses no stream memory operations: it stays on
// where the driver refuses them (not where the round was not seen, nor with
// cuda_ipc_device_arrivals false). Its few blocks spin only for peers that the host check has seen
// at this call already, so for no longer than their queued GPU work; ranks sharing a GPU need MPS
// for their kernels to be resident at once (without it they still finish, a time slice at a time).
//
// Cleanup, at the end of the point (the destructor, collective): every rank unmaps its peers'
// buffers (cudaIpcCloseMemHandle), all arrive, then each frees its own (cudaFree: freeing memory
// that another process still maps is undefined behaviour). A rank that dies leaves nothing behind:
// the driver releases a process's device memory and IPC mappings when it exits, however it exits
// (unlike a POSIX shared-memory name, which `shm` unlinks itself). Its peers wait in their next
// MPI call until mpirun, seeing the rank gone, stops the job.
//
// Refused before launch (cuda_ipc_problem, in one line naming the setting at fault): device
// "cpu", K-means (its sums stay in host memory), ranks on several nodes; and in a build without
// CUDA (cuda_ipc_unavailable_reason). Refused when made: ranks on several nodes, ranks on GPUs
// without peer access.
//
// Threading: one call at a time, from any thread (with overlap, the communication thread): each
// call makes the backend's GPU current on the calling thread first.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backends/backend_options.h"
#include "backends/gradient_sync.h"

namespace harness {

// Buffers smaller than this go through the one-shot kernel (the setting
// cuda_ipc_one_shot_below_bytes says otherwise). Measured with ranks sharing one H100 under MPS
// (experiments/gpu/comm_cuda.json, docs/gpus.md): one-shot was faster up to 4 MiB at 3 and 4
// ranks, two-shot from 16 MiB; at 2 ranks one-shot at every size. On GPUs of their own with
// NVLink, vLLM switches from 512 KiB: measure it there and set it.
constexpr std::size_t kCudaIpcOneShotBelowBytes = 16 * 1024 * 1024;

// Why this build lacks the backend (no CUDA), or "".
std::string cuda_ipc_unavailable_reason();

// Why the backend cannot serve a point with these options (BackendInfo::problem), starting with
// the setting at fault ("device: ..."), or "".
std::string cuda_ipc_problem(const BackendOptions& options);

// The backend on this rank's current GPU (select_cuda_device), reducing buffers smaller than
// `one_shot_below_bytes` with the one-shot kernel. Collective over `communicator`. Throws
// NotSupported when the build lacks it, cuda_ipc_problem refuses the options, the ranks span
// several nodes or two GPUs lack peer access; CommError when CUDA or MPI fail.
// `device_arrivals`: arrive on the GPU's stream where the driver allows (above), else on the host.
std::unique_ptr<GradientSync> make_cuda_ipc_allreduce(const Communicator& communicator, const BackendOptions& options,
                                                      std::size_t one_shot_below_bytes = kCudaIpcOneShotBelowBytes,
                                                      bool device_arrivals = true);

}  // namespace harness
