#include "backends/device_staging.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif

namespace harness {
namespace {

// How device memory reaches `backend`: its own GPU library (nccl) takes device pointers always,
// MPI takes them where the library is CUDA-aware, every other backend through pinned host memory.
DevicePath device_path_for(const GradientSync& backend) {
  const BackendInfo* info = backend_or_null(backend.name());
  if (info != nullptr && info->device_memory_only) return DevicePath::kBackendOnDevice;
  if (info != nullptr && info->accepts_device_pointers && mpi_accepts_device_pointers()) {
    return DevicePath::kDevicePointers;
  }
  return DevicePath::kPinnedStaging;
}

}  // namespace

#ifdef HARNESS_WITH_CUDA

namespace {

void check_cuda(cudaError_t code, std::string_view operation) {
  if (code == cudaSuccess) return;
  throw CommError(fmt::format("{} failed: {}", operation, cudaGetErrorString(code)));
}

}  // namespace

CudaStatus cuda_status() {
  CudaStatus status;
  status.built = true;
  const cudaError_t code = cudaGetDeviceCount(&status.devices);
  if (code != cudaSuccess) {
    status.devices = 0;
    status.reason = fmt::format("no usable CUDA device on this machine ({})", cudaGetErrorString(code));
  } else if (status.devices == 0) {
    status.reason = "no CUDA device on this machine";
  } else {
    status.usable = true;
  }
  return status;
}

int select_cuda_device(const Communicator& communicator) {
  const int local_rank = node_place(communicator).local_rank;
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices == 0) throw NotSupported("no CUDA device on this machine");
  const int device = local_rank % devices;
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

namespace {

// CUDA's version numbers: 1000 × major + 10 × minor.
std::string cuda_version_text(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

}  // namespace

CudaDeviceFacts cuda_device_facts(int device) {
  CudaDeviceFacts facts;
  facts.index = device;
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  facts.name = properties.name;
  facts.memory_bytes = static_cast<int64_t>(properties.totalGlobalMem);
  char bus_id[32] = {};
  check_cuda(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device), "cudaDeviceGetPCIBusId");
  facts.pci_bus_id = bus_id;
  int version = 0;
  check_cuda(cudaDriverGetVersion(&version), "cudaDriverGetVersion");
  facts.driver_version = cuda_version_text(version);
  check_cuda(cudaRuntimeGetVersion(&version), "cudaRuntimeGetVersion");
  facts.runtime_version = cuda_version_text(version);
  return facts;
}

bool mpi_accepts_device_pointers() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

DeviceBuffer::DeviceBuffer(std::size_t count) : count_(count) {
  if (count > 0) {
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(float)), "cudaMalloc");
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

void DeviceBuffer::copy_from_host(std::span<const float> host) {
  if (host.size() != count_) throw Error("DeviceBuffer::copy_from_host: size mismatch");
  if (count_ == 0) return;
  check_cuda(cudaMemcpy(data_, host.data(), count_ * sizeof(float), cudaMemcpyHostToDevice),
             "cudaMemcpy(host to device)");
}

void DeviceBuffer::copy_to_host(std::span<float> host) const {
  if (host.size() != count_) throw Error("DeviceBuffer::copy_to_host: size mismatch");
  if (count_ == 0) return;
  check_cuda(cudaMemcpy(host.data(), data_, count_ * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy(device to host)");
}

DeviceStagedSync::DeviceStagedSync(GradientSync& host_backend)
    : host_backend_(host_backend), path_(device_path_for(host_backend)) {}

DeviceStagedSync::~DeviceStagedSync() {
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
}

void DeviceStagedSync::reserve_pinned(std::size_t count) {
  if (count <= pinned_count_) return;
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
  pinned_ = nullptr;
  pinned_count_ = 0;
  // Page-locked memory lets the copy engine move the data without a bounce buffer.
  check_cuda(cudaMallocHost(reinterpret_cast<void**>(&pinned_), count * sizeof(float)),
             "cudaMallocHost");
  pinned_count_ = count;
}

void DeviceStagedSync::allreduce_sum(float* device_data, std::size_t count) {
  if (!host_backend_.exchanges()) return;  // one rank: no copies either way
  if (path_ != DevicePath::kPinnedStaging) {
    host_backend_.allreduce_sum(std::span<float>(device_data, count));
    return;
  }
  reserve_pinned(count);
  const std::size_t bytes = count * sizeof(float);
  if (bytes > 0) {
    check_cuda(cudaMemcpy(pinned_, device_data, bytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy(gradients to host)");
  }
  host_backend_.allreduce_sum(std::span<float>(pinned_, count));
  if (bytes > 0) {
    check_cuda(cudaMemcpy(device_data, pinned_, bytes, cudaMemcpyHostToDevice),
               "cudaMemcpy(sums to device)");
  }
}

#else  // !HARNESS_WITH_CUDA

namespace {

constexpr std::string_view kNotBuilt =
    "this harness was built without CUDA (configure with -DHARNESS_WITH_CUDA=ON on a machine "
    "with a CUDA toolkit)";

[[noreturn]] void throw_not_built() { throw NotSupported(std::string(kNotBuilt)); }

}  // namespace

CudaStatus cuda_status() {
  CudaStatus status;
  status.reason = std::string(kNotBuilt);
  return status;
}

int select_cuda_device(const Communicator&) { throw_not_built(); }

CudaDeviceFacts cuda_device_facts(int) { throw_not_built(); }

bool mpi_accepts_device_pointers() { return false; }

DeviceBuffer::DeviceBuffer(std::size_t count) : count_(count) { throw_not_built(); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::copy_from_host(std::span<const float>) { throw_not_built(); }
void DeviceBuffer::copy_to_host(std::span<float>) const { throw_not_built(); }

DeviceStagedSync::DeviceStagedSync(GradientSync& host_backend)
    : host_backend_(host_backend) {
  throw_not_built();
}
DeviceStagedSync::~DeviceStagedSync() = default;
void DeviceStagedSync::reserve_pinned(std::size_t) { throw_not_built(); }
void DeviceStagedSync::allreduce_sum(float*, std::size_t) { throw_not_built(); }

#endif  // HARNESS_WITH_CUDA

bool mps_control_running() {
  // Clients reach the control daemon through the `control` pipe in its pipe directory.
  const char* directory = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string pipe = std::string(directory != nullptr && directory[0] != '\0' ? directory : "/tmp/nvidia-mps") + "/control";
  std::error_code error;
  const auto status = std::filesystem::status(pipe, error);
  return std::filesystem::is_fifo(status) || std::filesystem::is_socket(status);
}

std::string_view exchange_path(const GradientSync& backend, bool on_device) {
  if (!backend.exchanges()) return kNoExchangePath;
  if (!on_device) return "host memory";
  switch (device_path_for(backend)) {
    case DevicePath::kBackendOnDevice:
      return backend.name();  // "nccl": the backend's own GPU library
    case DevicePath::kDevicePointers:
      return "device pointers";
    case DevicePath::kPinnedStaging:
      break;
  }
  return "pinned host staging";
}

std::string_view DeviceStagedSync::path() const { return exchange_path(host_backend_, true); }

}  // namespace harness
