// The GPU of a rank, and what CUDA says of it (device_staging.h declares them): which device a
// rank uses, its facts for the records, whether MPI takes device pointers, device buffers, MPS.
// Apart from staging itself (device_staging.cpp), which only uses them.
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "backends/device_staging.h"
#include "harness/common/errors.h"

#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda_check.h"
#endif
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support
#endif

namespace harness {

#ifdef HARNESS_WITH_CUDA

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
  check_cuda_call(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices == 0) throw NotSupported("no CUDA device on this machine");
  const int device = local_rank % devices;
  check_cuda_call(cudaSetDevice(device), "cudaSetDevice");
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
  check_cuda_call(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  facts.name = properties.name;
  facts.memory_bytes = static_cast<int64_t>(properties.totalGlobalMem);
  char bus_id[32] = {};
  check_cuda_call(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device), "cudaDeviceGetPCIBusId");
  facts.pci_bus_id = bus_id;
  int version = 0;
  check_cuda_call(cudaDriverGetVersion(&version), "cudaDriverGetVersion");
  facts.driver_version = cuda_version_text(version);
  check_cuda_call(cudaRuntimeGetVersion(&version), "cudaRuntimeGetVersion");
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
    check_cuda_call(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(float)), "cudaMalloc");
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

void DeviceBuffer::copy_from_host(std::span<const float> host) {
  if (host.size() != count_) throw Error("DeviceBuffer::copy_from_host: size mismatch");
  if (count_ == 0) return;
  check_cuda_call(cudaMemcpy(data_, host.data(), count_ * sizeof(float), cudaMemcpyHostToDevice),
                  "cudaMemcpy(host to device)");
  // From pageable memory cudaMemcpy may return before the DMA has landed: wait, so that the copy
  // is done when this returns (the comm benchmark starts its timer right after a reset).
  check_cuda_call(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize(host to device)");
}

void DeviceBuffer::copy_to_host(std::span<float> host) const {
  if (host.size() != count_) throw Error("DeviceBuffer::copy_to_host: size mismatch");
  if (count_ == 0) return;
  check_cuda_call(cudaMemcpy(host.data(), data_, count_ * sizeof(float), cudaMemcpyDeviceToHost),
                  "cudaMemcpy(device to host)");
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

#endif  // HARNESS_WITH_CUDA

bool mps_control_running() {
  // Clients reach the control daemon through the `control` pipe in its pipe directory.
  const char* directory = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string pipe =
      std::string(directory != nullptr && directory[0] != '\0' ? directory : "/tmp/nvidia-mps") + "/control";
  std::error_code error;
  const auto status = std::filesystem::status(pipe, error);
  return std::filesystem::is_fifo(status) || std::filesystem::is_socket(status);
}

}  // namespace harness
