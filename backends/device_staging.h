// Gradient synchronisation from GPU memory (`device: "cuda"`), in the two ways MPI codes do it,
// and the way of a GPU collective library:
// - staging: copy the device buffer into a pinned (page-locked) host buffer, reduce it there with
//   any host backend, copy the sums back. Works with every host backend and every MPI library.
//   The host buffer is the backend's own memory where it offers some (shm's and hier's shared
//   segments, reduced in place), page-locked with cudaHostRegister.
// - device pointers: hand the device address straight to MPI when the library reports CUDA
//   support at run time (Open MPI's MPIX_Query_cuda_support), for a backend whose table entry
//   accepts device pointers (MPI itself does its arithmetic; the others add floats in host code).
// - a backend that reduces GPU memory only (its table entry's device_memory_only: nccl) always
//   gets the device address, and is never staged.
// The one path from device memory to a backend: the trainer's gradient buckets and the
// communication benchmark both go through DeviceStagedSync.
//
// Everything here is compiled in every build. Without HARNESS_WITH_CUDA, cuda_status() says so
// and the classes throw NotSupported; validation rejects `device: "cuda"` before any launch, so
// users meet that message instead.
//
// Threading: a DeviceStagedSync is used by one thread at a time, like the GradientSync it wraps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/gradient_sync.h"
#include "backends/registry.h"  // CudaStatus, cuda_status()

// CUDA's stream and event types (cudaStream_t is CUstream_st*, cudaEvent_t CUevent_st*), declared
// without CUDA's headers, which only the device code sees.
struct CUstream_st;
struct CUevent_st;

namespace harness {

// Gives this rank its own GPU on a node with several: the rank's index among the ranks of its
// node (its host name: node_place) modulo the node's devices, made current with cudaSetDevice.
// Collective over `communicator`. Returns the device index, which the rank passes on to its
// workload (there is no global "current device" in the harness).
int select_cuda_device(const Communicator& communicator);
// The device index that means no GPU (device cpu): make_workload's and PointContext's `cuda_device`.
inline constexpr int kNoCudaDevice = -1;

// What CUDA says of device `device` and of this process's CUDA, for the records (`gpus`).
struct CudaDeviceFacts {
  int index = 0;
  std::string name;         // cudaDeviceProp::name
  std::string pci_bus_id;   // cudaDeviceGetPCIBusId, "0000:2A:00.0"
  int64_t memory_bytes = 0;
  std::string driver_version;   // cudaDriverGetVersion as "13.0"
  std::string runtime_version;  // cudaRuntimeGetVersion as "13.0"
};
// Throws NotSupported in builds without HARNESS_WITH_CUDA.
CudaDeviceFacts cuda_device_facts(int device);

// Whether the MPI library accepts device pointers (CUDA-aware), asked at run time. False in
// builds without HARNESS_WITH_CUDA and with MPI libraries that have no such query.
bool mpi_accepts_device_pointers();

// How buffers on the host, or on a GPU (`on_device`), reach `backend`, as records say it
// (`exchange_path`): "host memory", "pinned host staging", "device pointers", or kNoExchangePath
// when it exchanges nothing (one rank). Any build.
std::string_view exchange_path(const GradientSync& backend, bool on_device);

// The levers staging runs `backend` with, by the staged buffer's size (staging_levers.h), for
// the records; empty where buffers on the host, or on a GPU (`on_device`), are not staged to it
// through the host. Staged in chunks of `chunk_floats`. Any build.
std::vector<StagingLeverStep> staging_lever_steps(const GradientSync& backend, bool on_device,
                                                  std::size_t chunk_floats);

// A float32 buffer in device memory (cudaMalloc), freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() { return data_; }
  std::size_t size() const { return count_; }
  void copy_from_host(std::span<const float> host);  // host.size() == size(); done when it returns
  void copy_to_host(std::span<float> host) const;

 private:
  float* data_ = nullptr;
  std::size_t count_ = 0;
};

// Staging cuts a buffer into chunks of this many floats (4 MiB) and pipelines them: the copy
// engine moves chunk k+1 out of the GPU while the host backend reduces chunk k and chunk k-1 goes
// back. Large enough that each chunk's copy runs near the link's full rate (pinned copies were
// measured at 34-55 GB/s from 1 MiB up on an H100, issue 30) and that a host backend's fixed cost
// per call stays small beside a chunk's reduction; small enough that the two copies nothing
// overlaps, the first chunk's out and the last one's back, are a sixteenth of a 64 MiB buffer's.
// A buffer of one chunk or less is staged as before, in one piece: nothing to overlap.
inline constexpr std::size_t kStagingChunkFloats = std::size_t{1} << 20;

// Floats [offset, offset + count) of a staged buffer.
struct StagingChunk {
  std::size_t offset = 0;
  std::size_t count = 0;
  friend bool operator==(const StagingChunk&, const StagingChunk&) = default;
};

// The chunks staging cuts `count` floats into, in the order the host backend reduces them: full
// chunks of `chunk_floats` (> 0) from the start, the last one shorter; one empty chunk for 0
// floats, so that the backend is still called once, as every rank calls it. The host backend's
// reductions are collectives, so every rank must cut the same way: the plan depends on nothing
// but the count, which is the same on every rank. Any build.
std::vector<StagingChunk> staging_chunks(std::size_t count, std::size_t chunk_floats = kStagingChunkFloats);

// How a DeviceStagedSync hands device memory to its backend.
enum class DevicePath {
  kPinnedStaging,    // copied through pinned host memory
  kDevicePointers,   // device pointers to a CUDA-aware MPI
  kBackendOnDevice,  // device pointers to a backend that reduces GPU memory only (nccl)
};

class DeviceStagedSync {
 public:
  // `host_backend` must outlive this object. Device pointers go to it directly when its table
  // entry reduces device memory only, or accepts device pointers and mpi_accepts_device_pointers().
  // Staged buffers above `chunk_floats` (> 0) are pipelined in chunks of that many floats.
  explicit DeviceStagedSync(GradientSync& host_backend, std::size_t chunk_floats = kStagingChunkFloats);
  ~DeviceStagedSync();
  DeviceStagedSync(const DeviceStagedSync&) = delete;
  DeviceStagedSync& operator=(const DeviceStagedSync&) = delete;

  // Sums `count` floats at `device_data` across ranks, in place; the sums are in device memory
  // when it returns. Collective, like GradientSync::allreduce_sum. The buffer's contents may have
  // been written by work still queued on the legacy default stream (LibTorch's default stream,
  // cudaMemcpy): staging waits for it. Every call of one object passes memory of one GPU; any
  // thread may call (the pipeline makes that GPU current first: the overlap's communication
  // thread has no current GPU of its own).
  // Staged, a buffer of more than chunk_floats is pipelined in staging_chunks(count, chunk_floats):
  // the host backend sees each chunk as a call of its own, on the threads and, where it scatters
  // its sums (GradientSync::scatters_sums: shm_copy_engine_gathers), with the copy engine
  // gathering each chunk's sums from their owners' memory, as staging_levers picks them for the
  // buffer's size ("auto" by size). Every sum is elementwise, so each element still sums the
  // same values; only a backend whose order of addition depends on the length of the call (a
  // ring's segments, Open MPI's choice of algorithm) may round an element differently, with 3
  // ranks or more (with 2, a + b is b + a to the bit).
  void allreduce_sum(float* device_data, std::size_t count);

  // "pinned host staging", "device pointers" (a CUDA-aware MPI), the name of a backend that
  // reduces device memory itself ("nccl"), or, with one rank, kNoExchangePath; for logs and
  // results (exchange_path).
  std::string_view path() const;

 private:
  void reserve_pinned(std::size_t count);
  void free_pinned() noexcept;
  // Through the pipeline's streams, in staging_chunks (one for a buffer of one chunk or less).
  void allreduce_staged(float* device_data, std::size_t count);
  // Finds the GPU of `device_data` (the first time: every call passes memory of one GPU) and
  // makes it current on this thread.
  void use_device_of(const float* device_data);
  // The streams and one event per chunk, made on the data's GPU the first time they are needed.
  void prepare_pipeline(const float* device_data, std::size_t chunks);
  void release_pipeline() noexcept;

  GradientSync& host_backend_;
  std::size_t chunk_floats_;
  DevicePath path_ = DevicePath::kPinnedStaging;
  // Reused from call to call: grown, never shrunk. The host backend's own memory where it offers
  // some (allocate_buffer: shm's and hier's shared segments, which they reduce in place), page-locked
  // where it is (cudaHostRegister); else cudaMallocHost's.
  float* pinned_ = nullptr;
  std::size_t pinned_count_ = 0;
  std::shared_ptr<float> backend_memory_;  // what pinned_ points into, when the backend's
  bool backend_memory_registered_ = false;
  // What cudaHostRegister page-locked of the backend's memory: pinned_'s part, or, for a backend
  // that scatters its sums, every rank's segment (scattered_memory).
  std::span<std::byte> registered_;
  // The pipeline: chunks go out on one stream and back on another, so that the two directions
  // overlap too; neither waits for work queued on the legacy default stream after the call began.
  int device_ = -1;                       // the GPU whose memory the calls pass
  CUstream_st* copy_out_ = nullptr;       // device to pinned host
  CUstream_st* copy_back_ = nullptr;      // pinned host to device
  CUevent_st* input_ready_ = nullptr;     // recorded on the legacy default stream
  std::vector<CUevent_st*> copied_out_;   // chunk k is in pinned memory
  CUevent_st* copied_back_ = nullptr;     // every chunk is back in device memory
};

}  // namespace harness
