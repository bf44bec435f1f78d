// How backend cuda_ipc's flags compare (cuda_ipc_allreduce.h): by 32-bit epochs counted
// cyclically, and, for the one-kernel path's flags, an epoch of each block's own. Plain C++17 for
// both nvcc (the kernels) and the host compiler (the backend, the tests); no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define HARNESS_HOST_DEVICE __host__ __device__
#else
#define HARNESS_HOST_DEVICE
#endif

namespace harness::cuda_ipc {

// Whether a flag holding `flag` has reached `epoch`: their difference as a signed 32-bit number is
// not negative, so a flag one epoch ahead (a peer already at its next call) counts, across the
// wrap from 2^32 - 1 to 0 too. Exact only while the two are less than 2^31 apart: every flag is
// kept within one epoch of what its reader waits for (below).
HARNESS_HOST_DEVICE constexpr bool epoch_reached(std::uint32_t flag, std::uint32_t epoch) {
  return static_cast<std::int32_t>(flag - epoch) >= 0;
}

// The one-kernel path (cuda_ipc_kernels.h): at most this many blocks of kOneKernelThreads
// threads, one per kOneKernelThreads elements.
constexpr unsigned kOneShotWithArrivalBlocks = 32;
constexpr unsigned kOneKernelThreads = 256;

// The blocks the one-kernel path runs for `count` elements: the same on every rank, which passes
// the same count.
HARNESS_HOST_DEVICE constexpr unsigned one_kernel_blocks(std::size_t count) {
  const std::size_t wanted = (count + kOneKernelThreads - 1) / kOneKernelThreads;
  return wanted < 1                           ? 1U
         : wanted > kOneShotWithArrivalBlocks ? kOneShotWithArrivalBlocks
                                              : static_cast<unsigned>(wanted);
}

// What each block of a one-kernel call waits for: how many calls have used that block, this one
// included. A count of all calls would not do: a block that sits out calls (smaller buffers run
// fewer blocks) keeps the epoch of its last use in its flags, and after 2^31 calls without it
// that stale flag would compare as ahead, and the block would read a peer's region before the
// peer wrote it. Counted per block, a peer's flag is always within one use of the epoch its
// reader waits for (the peer's previous use, this one, or its next: it cannot start a second one
// before this rank's block has told it at this one).
struct BlockEpochs {
  std::uint32_t value[kOneShotWithArrivalBlocks] = {};
};

// The host's count, one per backend, reset with its flags (which start at 0).
class BlockEpochCounter {
 public:
  explicit BlockEpochCounter(std::uint32_t start = 0) {
    for (std::uint32_t& epoch : epochs_.value) epoch = start;
  }
  // The epochs of a call that runs `blocks` blocks (1 to kOneShotWithArrivalBlocks): blocks
  // [0, blocks) move on by one, the others keep theirs.
  BlockEpochs next(unsigned blocks) {
    for (unsigned b = 0; b < blocks && b < kOneShotWithArrivalBlocks; ++b) ++epochs_.value[b];
    return epochs_;
  }
  const BlockEpochs& current() const { return epochs_; }

 private:
  BlockEpochs epochs_;
};

}  // namespace harness::cuda_ipc
