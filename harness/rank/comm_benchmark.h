// The communication benchmark (experiment kind "comm"), in the manner of nccl-tests and the OSU
// micro-benchmarks: for each message size from comm_min_bytes to comm_max_bytes (× comm_size_factor)
// every rank reduces a random float32 buffer with the point's backend, comm_warmup_iterations
// times untimed and comm_iterations times timed, each timed reduction after a barrier. A
// reduction's time is the slowest rank's. After the last reduction every element is compared with
// MPI_Allreduce's result on the same input: `wrong` counts elements, over all ranks, off by more
// than 1e-5 × max(1, |expected|), and must be 0. Then every rank at once times a[i] += b[i] and a
// copy over the same buffers (reduce_probe_us, copy_probe_us), and rank 0 alone does the same
// (reduce_probe_one_us, copy_probe_one_us): the memory's limit beside the backend's figure, and
// the reduction cost that `harness model` needs. On device "cuda", every rank at once also times
// on its GPU, with CUDA events, a copy of the buffer from device to pinned host memory, back, and
// within device memory (device_to_host_probe_us, host_to_device_probe_us, device_copy_probe_us):
// the GPU's limits. Last, MPI_Sendrecv between two ranks of rank 0's node and between rank 0 and
// another node (intra_node_gbps, inter_node_gbps): the transport's.
//
// Bandwidths use 10^9 bytes: algbw = bytes / time, busbw = algbw · 2(p−1)/p (the traffic each
// rank's link carries in a bandwidth-optimal allreduce, so busbw is comparable across p; 0 for
// one rank, as in nccl-tests).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backends/gradient_sync.h"
#include "harness/rank/timeline.h"
#include "harness/results/record.h"
#include "harness/study/settings.h"

namespace harness {

// The message sizes a point sweeps, smallest first; the largest is comm_max_bytes even when the
// factor steps past it.
std::vector<int64_t> comm_message_sizes(const CommOptions& options);

// Called on every rank after each message size with the results so far (the same on every
// rank), outside the timed reductions: the rank program writes them as partial measurements.
using CommSizeDone = std::function<void(const std::vector<MessageSizeMetrics>& so_far)>;

// The timeline traces the first this many timed reductions of each size.
inline constexpr int kTracedIterationsPerSize = 5;

// Collective over `communicator`; every rank returns the same results. With device "cuda" the
// buffers live on this rank's GPU (the current device). With a `timeline`, the first timed
// reductions of every size are traced there.
std::vector<MessageSizeMetrics> run_comm_benchmark(GradientSync& backend,
                                                   const Communicator& communicator,
                                                   const PointSettings& settings,
                                                   const CommSizeDone& size_done = {},
                                                   Timeline* timeline = nullptr);

// This rank's elements of `buffer` off from `expected` by more than 1e-5 × max(1, |expected|);
// a NaN or an infinity where a finite sum is expected counts as off (sizes equal).
int64_t elements_off(std::span<const float> buffer, std::span<const float> expected);

// busbw from algbw for an allreduce over `ranks`.
double allreduce_bus_bandwidth(double algbw, int ranks);

}  // namespace harness
