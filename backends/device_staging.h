// Gradient synchronisation from GPU memory (`device: "cuda"`), in the two ways MPI codes do it,
// and the way of a GPU collective library:
// - staging: copy the device buffer into a pinned (page-locked) host buffer, reduce it there with
//   any host backend, copy the sums back. Works with every host backend and every MPI library.
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
#include <span>
#include <string>

#include "backends/gradient_sync.h"
#include "backends/registry.h"  // CudaStatus, cuda_status()

namespace harness {

// Gives this rank its own GPU on a node with several: the rank's index among the ranks of its
// node (MPI_COMM_TYPE_SHARED) modulo the node's devices, made current with cudaSetDevice.
// Collective over `communicator`. Returns the device index, which the rank passes on to its
// workload (there is no global "current device" in the harness).
int select_cuda_device(const Communicator& communicator);

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

// A float32 buffer in device memory (cudaMalloc), freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() { return data_; }
  std::size_t size() const { return count_; }
  void copy_from_host(std::span<const float> host);  // host.size() == size()
  void copy_to_host(std::span<float> host) const;

 private:
  float* data_ = nullptr;
  std::size_t count_ = 0;
};

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
  explicit DeviceStagedSync(GradientSync& host_backend);
  ~DeviceStagedSync();
  DeviceStagedSync(const DeviceStagedSync&) = delete;
  DeviceStagedSync& operator=(const DeviceStagedSync&) = delete;

  // Sums `count` floats at `device_data` across ranks, in place. Collective, like
  // GradientSync::allreduce_sum.
  void allreduce_sum(float* device_data, std::size_t count);

  // "pinned host staging", "device pointers" (a CUDA-aware MPI), the name of a backend that
  // reduces device memory itself ("nccl"), or, with one rank, kNoExchangePath; for logs and
  // results (exchange_path).
  std::string_view path() const;

 private:
  void reserve_pinned(std::size_t count);

  GradientSync& host_backend_;
  DevicePath path_ = DevicePath::kPinnedStaging;
  float* pinned_ = nullptr;  // cudaMallocHost
  std::size_t pinned_count_ = 0;
};

}  // namespace harness
