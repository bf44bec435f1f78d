// Gradient buckets, as in PyTorch DDP's Reducer: the parameters' gradients are laid out in one
// fused buffer in reverse parameter order (the order backward produces them) and cut into
// buckets of about bucket_mb; each bucket is summed across ranks with one backend call.
//
// Without overlap, finish_step() packs, reduces and unpacks the buckets one after the other once
// backward is over; on the CPU the parameters' .grad are then views of the fused buffer, so
// autograd accumulates into the buckets and packing has nothing to copy. With overlap, a hook on
// every parameter copies its gradient into the bucket as soon as autograd computes it; a bucket
// whose gradients are all in is handed to a communication thread, which reduces buckets strictly
// in bucket order (so every rank issues the same sequence of collectives) while backward goes
// on; finish_step() then only waits for what is still in flight. Buckets whose hooks did not fire
// (unused parameters, a rank that only serves) are packed from .grad and launched by
// finish_step().
//
// Device: parameters may live on a GPU (a CUDA LibTorch); the fused buffer then lives there too,
// and each bucket goes to the backend through DeviceStagedSync (backends/device_staging.h), the
// one path from device memory to a backend: staged through pinned host memory, or as device
// pointers where the backend and the MPI library accept them.
//
// One rank: with a backend that exchanges nothing (gradient_sync.h) a step copies, stages and
// reduces nothing: the .grad are the fused buffer's views and already the sums.
//
// Threading: the communication thread is the only one calling the backend between begin_step()
// and finish_step(); the caller must not make MPI calls in that window. That is what
// MPI_THREAD_SERIALIZED allows, and overlap requires at least that level.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "backends/device_staging.h"
#include "backends/gradient_sync.h"
#include "harness/rank/timeline.h"

namespace harness {

struct BucketTiming {
  // With overlap: packing, reducing and unpacking the buckets on whichever thread did it (the
  // hooks' copies during backward and the communication thread's reductions included).
  // Without overlap all of it happens inside finish_step(), so the caller's own timing of that
  // call is the communication time; finish_step() then reads no clock (a clock read is 2-3% of
  // the blas Iris network's 6 us step) and leaves this empty.
  std::optional<double> overlapped_comm_s;
};

class GradientBuckets {
 public:
  // `parameters` are distinct dense float32 tensors (any memory format) with defined .grad;
  // without overlap on the CPU their .grad are replaced by views of the fused buffer. `divisor`
  // is what the sums are divided by (the number of training ranks). Throws NotSupported when
  // overlap is asked for and MPI's thread level is below MPI_THREAD_SERIALIZED.
  // On a GPU, buffers staged through the host go in pipelined chunks of `staging_chunk_floats`.
  GradientBuckets(std::vector<torch::Tensor> parameters, GradientSync& backend, double bucket_mb,
                  bool overlap, int divisor, std::size_t staging_chunk_floats = kStagingChunkFloats);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Sets every .grad to zero (one memset when they are views of the fused buffer).
  void zero_gradients();
  // Call before the step's backward pass. Backward passes outside a step exchange nothing.
  void begin_step();
  // Call after it: every parameter's .grad then holds the average over the training ranks, and
  // no reduction is in flight any more.
  BucketTiming finish_step();

  std::size_t bucket_count() const { return buckets_.size(); }
  // Each reduction of a traced step becomes an event there (on the thread that ran it). Set it
  // between steps; it must outlive the buckets' use.
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }
  // Buckets that the last step launched from autograd hooks, during backward (overlap only).
  std::size_t hook_launches() const { return hook_launches_; }

 private:
  struct Bucket {
    std::size_t offset = 0;  // into fused_
    std::size_t count = 0;
    std::vector<std::size_t> parameters;  // indices into parameters_
    int pending = 0;                       // gradients not yet copied in, this step
    bool launched = false;
  };

  void on_gradient(std::size_t parameter, const torch::Tensor& gradient);
  void pack(const Bucket& bucket);
  void reduce(const Bucket& bucket);  // with the backend, staged when the buffer is on a device
  void unpack();  // every .grad = its slice of the fused buffer / divisor
  bool gradients_are_views() const;  // every .grad is its slice of the fused buffer
  void launch_ready_buckets();  // in bucket order, as far as they are complete
  void communication_loop();
  void stop_thread_and_hooks();

  std::vector<torch::Tensor> parameters_;
  GradientSync& backend_;
  bool overlap_;
  float scale_;
  // The fused buffer, on the parameters' device; on the CPU in the backend's own memory when it
  // offers some.
  torch::Tensor fused_tensor_;
  float* fused_ = nullptr;
  std::optional<DeviceStagedSync> staging_;  // when the parameters live on a GPU
  std::vector<std::size_t> parameter_offset_;  // into fused_
  std::vector<torch::Tensor> fused_slices_;    // per parameter: its region, in its layout
  std::vector<std::size_t> parameter_bucket_;
  std::vector<Bucket> buckets_;
  std::size_t next_launch_ = 0;
  // Between begin_step() and finish_step(); hooks act only then. Training thread only (CPU
  // autograd runs the hooks on the thread that called backward).
  bool in_step_ = false;
  std::vector<unsigned> hooks_;  // handle per parameter (overlap only)
  std::vector<bool> delivered_;  // this step, per parameter (training thread only)
  std::size_t hook_launches_ = 0;
  Timeline* timeline_ = nullptr;

  // Communication thread (overlap only).
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<std::size_t> queue_;
  std::size_t completed_ = 0;
  double comm_s_ = 0;
  double copy_s_ = 0;  // the hooks' copies into buckets, and the packing of what they left
  bool stopping_ = false;
  std::exception_ptr failure_;
};

}  // namespace harness
