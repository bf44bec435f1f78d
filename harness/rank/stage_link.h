// What crosses one cut between neighbouring pipeline stages (pipeline.h), as one of its two stages
// sees it: the tensor's shape and memory layout, learnt from a forward pass before training and the
// same on both sides, so that MPI moves raw bytes; and where MPI reads and writes them.
//
// MPI moves host memory here: neither Debian's Open MPI nor the GPU machine's is CUDA-aware. A
// stage on a GPU stages what it sends through pinned host memory (a device-to-host copy, which
// waits for the kernels that made the tensor, before the send) and what it receives too (a
// host-to-device copy queued on the stage's stream after the receive; LibTorch's caching host
// allocator keeps the pinned buffer until that copy is done). A CUDA-aware MPI, or NCCL's
// send/recv, would move GPU memory directly, saving both copies and the wait for the first
// (docs/pipeline.md).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace harness {

class StageLink {
 public:
  StageLink() = default;
  // The cut crossed by tensors like `example`, on a stage computing on `device`.
  StageLink(const torch::Tensor& example, torch::Device device);

  int64_t bytes() const { return bytes_; }
  // A host tensor in the cut's layout for a receive to write (pinned for a stage on a GPU).
  torch::Tensor host_buffer() const;
  // `tensor` in the cut's layout in host memory, for a send to read: itself where it already is.
  torch::Tensor to_host(const torch::Tensor& tensor) const;
  // A received host tensor where the stage computes: itself on the CPU.
  torch::Tensor to_device(const torch::Tensor& host) const;

 private:
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t bytes_ = 0;
  torch::Device device_ = torch::kCPU;
};

// Memory a stage's steps hold, in bytes: the CPU allocator's count on the CPU
// (counting_allocator.h), the CUDA caching allocator's statistics on a GPU where LibTorch was built
// with CUDA (PyTorch's; Debian's is not); elsewhere not measured (0).
class StageMemory {
 public:
  explicit StageMemory(torch::Device device);
  bool measured() const { return measured_; }
  int64_t in_use() const;
  void reset_peak();
  int64_t peak() const;  // the most in use since reset_peak

 private:
  torch::Device device_;
  bool measured_ = false;
};

// Waits for the work queued on `device` (none on the CPU): the times of a stage's passes on a GPU
// are then its kernels', not only their launches'.
void finish_queued_work(torch::Device device);

}  // namespace harness
