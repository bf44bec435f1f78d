#include "backends/device_staging.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda_check.h"
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

std::vector<StagingChunk> staging_chunks(std::size_t count, std::size_t chunk_floats) {
  if (chunk_floats == 0) throw Error("staging_chunks: chunk_floats must be positive");
  std::vector<StagingChunk> chunks;
  chunks.reserve(count / chunk_floats + 1);
  std::size_t offset = 0;
  do {
    const std::size_t length = std::min(chunk_floats, count - offset);
    chunks.push_back({offset, length});
    offset += length;
  } while (offset < count);
  return chunks;
}

#ifdef HARNESS_WITH_CUDA

DeviceStagedSync::DeviceStagedSync(GradientSync& host_backend, std::size_t chunk_floats)
    : host_backend_(host_backend), chunk_floats_(chunk_floats), path_(device_path_for(host_backend)) {
  if (chunk_floats_ == 0) throw Error("DeviceStagedSync: chunk_floats must be positive");
}

DeviceStagedSync::~DeviceStagedSync() {
  release_pipeline();  // first: it waits for copies that may still use the pinned buffer
  free_pinned();
}

void DeviceStagedSync::reserve_pinned(std::size_t count) {
  if (count <= pinned_count_) return;
  free_pinned();
  // A backend that reduces its own memory in place (shm, hier) gets the copies straight into it:
  // otherwise it would copy each staged buffer into its shared segments and the sums back out,
  // two more passes over host memory, which bound staging on the GPU machine (docs/gpus.md).
  // Collective, as allocate_buffer must be: every rank comes here with the same count. Every rank
  // then uses the backend's memory, page-locked or not, as its contract asks.
  if (std::shared_ptr<float> offered = host_backend_.allocate_buffer(count)) {
    backend_memory_ = std::move(offered);
    pinned_ = backend_memory_.get();
    pinned_count_ = count;
    // Page-locked, the copy engine moves the data without a bounce buffer; where the driver
    // refuses to lock it, the copies still work, staged by the driver. A backend that scatters
    // its sums has the copy engine read other ranks' segments too: all of them are locked.
    const std::span<std::byte> scattered = host_backend_.scattered_memory(pinned_);
    registered_ = scattered.empty() ? std::as_writable_bytes(std::span<float>(pinned_, count)) : scattered;
    backend_memory_registered_ =
        cudaHostRegister(registered_.data(), registered_.size(), cudaHostRegisterDefault) == cudaSuccess;
    if (!backend_memory_registered_) cudaGetLastError();  // not sticky; clear it
    return;
  }
  // Page-locked memory lets the copy engine move the data without a bounce buffer.
  check_cuda_call(cudaMallocHost(reinterpret_cast<void**>(&pinned_), count * sizeof(float)),
             "cudaMallocHost");
  pinned_count_ = count;
}

void DeviceStagedSync::free_pinned() noexcept {
  if (backend_memory_ != nullptr) {
    if (backend_memory_registered_) cudaHostUnregister(registered_.data());
    backend_memory_.reset();  // the backend's, which it frees when no one holds it
  } else if (pinned_ != nullptr) {
    cudaFreeHost(pinned_);
  }
  pinned_ = nullptr;
  pinned_count_ = 0;
  backend_memory_registered_ = false;
  registered_ = {};
}

void DeviceStagedSync::use_device_of(const float* device_data) {
  // Found once: every call of one object passes memory of one GPU.
  if (device_ < 0) {
    cudaPointerAttributes attributes{};
    check_cuda_call(cudaPointerGetAttributes(&attributes, device_data), "cudaPointerGetAttributes");
    if (attributes.type != cudaMemoryTypeDevice) {
      throw Error("DeviceStagedSync::allreduce_sum: the buffer is not in device memory");
    }
    device_ = attributes.device;
  }
  check_cuda_call(cudaSetDevice(device_), "cudaSetDevice");
}

void DeviceStagedSync::allreduce_sum(float* device_data, std::size_t count) {
  if (!host_backend_.exchanges()) return;  // one rank: no copies either way
  if (path_ == DevicePath::kBackendOnDevice) {  // nccl orders itself after the caller's work
    host_backend_.allreduce_sum(std::span<float>(device_data, count));
    return;
  }
  // The data's GPU, current on this thread (the overlap's communication thread has none of its
  // own): its legacy default stream is where the work that wrote the buffer is queued, and
  // where a plain cudaMemcpy waits for it. On another GPU, the copy would not wait.
  if (count > 0) use_device_of(device_data);
  if (path_ == DevicePath::kDevicePointers) {
    // A CUDA-aware MPI does not follow CUDA's stream order: the buffer must be written first.
    if (count > 0) check_cuda_call(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize(gradients)");
    host_backend_.allreduce_sum(std::span<float>(device_data, count));
    return;
  }
  reserve_pinned(count);
  if (count == 0) {  // nothing to copy; the backend is still called, as every rank calls it
    host_backend_.allreduce_sum(std::span<float>(pinned_, count));
    return;
  }
  allreduce_staged(device_data, count);
}

void DeviceStagedSync::allreduce_staged(float* device_data, std::size_t count) {
  const std::vector<StagingChunk> chunks = staging_chunks(count, chunk_floats_);
  prepare_pipeline(device_data, chunks.size());
  // The overlap's communication thread has no current GPU of its own.
  check_cuda_call(cudaSetDevice(device_), "cudaSetDevice");
  // The copies out wait, through an event, for the work queued on the legacy default stream (what
  // wrote the buffer), as backend nccl does; the streams are non-blocking, so work queued there
  // later (the rest of backward, with overlap) need not wait for the copies, nor the copies back
  // for it. So also for a buffer of one chunk: a cudaMemcpy on the legacy stream would queue its
  // copy back behind every kernel queued there meanwhile, and the call would last until they end.
  check_cuda_call(cudaEventRecord(input_ready_, cudaStreamLegacy), "cudaEventRecord(input ready)");
  check_cuda_call(cudaStreamWaitEvent(copy_out_, input_ready_, 0), "cudaStreamWaitEvent(input ready)");
  // Every chunk's copy out is queued at once: the copy engine moves chunk k+1 while the host
  // reduces chunk k. Each chunk has its own part of the pinned buffer, so no copy waits for
  // another to free space.
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    check_cuda_call(cudaMemcpyAsync(pinned_ + chunks[k].offset, device_data + chunks[k].offset,
                               chunks[k].count * sizeof(float), cudaMemcpyDeviceToHost, copy_out_),
               "cudaMemcpyAsync(gradients to host)");
    check_cuda_call(cudaEventRecord(copied_out_[k], copy_out_), "cudaEventRecord(chunk copied out)");
  }
  // In chunk order on every rank: the host backend's calls are collectives. Its levers by the
  // buffer's size (staging_levers.h): the threads that sum each chunk, and whether a backend that
  // scatters its sums (shm_copy_engine_gathers) leaves each in its owner's segment for the copy
  // engine to gather; the same on every rank, which stages the same size.
  const StagingLevers levers =
      staging_levers(count * sizeof(float), chunk_floats_ * sizeof(float), host_backend_.staging_lever_settings(),
                     host_backend_.host_threads(), host_backend_.scatters_sums());
  host_backend_.use_host_threads(levers.reduce_threads);
  const bool gathers = levers.copy_engine_gathers;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    check_cuda_call(cudaEventSynchronize(copied_out_[k]), "cudaEventSynchronize(chunk copied out)");
    const std::span<float> chunk(pinned_ + chunks[k].offset, chunks[k].count);
    std::vector<std::span<const float>> pieces;
    if (gathers) {
      pieces = host_backend_.allreduce_sum_scattered(chunk);
    } else {
      host_backend_.allreduce_sum(chunk);
      pieces.emplace_back(chunk);
    }
    // Back on a stream of its own, beside the copies still going out.
    float* back_to = device_data + chunks[k].offset;
    for (const std::span<const float> piece : pieces) {
      check_cuda_call(cudaMemcpyAsync(back_to, piece.data(), piece.size_bytes(), cudaMemcpyHostToDevice, copy_back_),
                      "cudaMemcpyAsync(sums to device)");
      back_to += piece.size();
    }
  }
  // The contract: the sums are in device memory when the call returns (and the pinned buffer is
  // free for the next call).
  check_cuda_call(cudaEventRecord(copied_back_, copy_back_), "cudaEventRecord(copied back)");
  check_cuda_call(cudaEventSynchronize(copied_back_), "cudaEventSynchronize(copied back)");
  // Every rank has its sums: the owners may overwrite their segments in the next call.
  if (gathers) host_backend_.end_scattered();
}

void DeviceStagedSync::prepare_pipeline(const float* device_data, std::size_t chunks) {
  if (copied_back_ == nullptr) {  // made last: everything before it is there too
    release_pipeline();            // what a failed attempt made
    // Streams and events belong to the GPU current when they are made: the data's.
    use_device_of(device_data);
    check_cuda_call(cudaStreamCreateWithFlags(&copy_out_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cuda_call(cudaStreamCreateWithFlags(&copy_back_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cuda_call(cudaEventCreateWithFlags(&input_ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check_cuda_call(cudaEventCreateWithFlags(&copied_back_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  check_cuda_call(cudaSetDevice(device_), "cudaSetDevice");
  while (copied_out_.size() < chunks) {
    cudaEvent_t event = nullptr;
    check_cuda_call(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    copied_out_.push_back(event);
  }
}

void DeviceStagedSync::release_pipeline() noexcept {
  if (device_ >= 0) cudaSetDevice(device_);
  // A call that threw (a host backend's failure) may have left copies queued.
  if (copy_out_ != nullptr) cudaStreamSynchronize(copy_out_);
  if (copy_back_ != nullptr) cudaStreamSynchronize(copy_back_);
  for (cudaEvent_t event : copied_out_) cudaEventDestroy(event);
  copied_out_.clear();
  for (cudaEvent_t* event : {&input_ready_, &copied_back_}) {
    if (*event != nullptr) cudaEventDestroy(*event);
    *event = nullptr;
  }
  for (cudaStream_t* stream : {&copy_out_, &copy_back_}) {
    if (*stream != nullptr) cudaStreamDestroy(*stream);
    *stream = nullptr;
  }
}

#else  // !HARNESS_WITH_CUDA

namespace {

// cuda_status() says why: this build has no CUDA.
[[noreturn]] void throw_staging_not_built() { throw NotSupported(cuda_status().reason); }

}  // namespace

DeviceStagedSync::DeviceStagedSync(GradientSync& host_backend, std::size_t chunk_floats)
    : host_backend_(host_backend), chunk_floats_(chunk_floats) {
  throw_staging_not_built();
}
DeviceStagedSync::~DeviceStagedSync() = default;
void DeviceStagedSync::reserve_pinned(std::size_t) { throw_staging_not_built(); }
void DeviceStagedSync::free_pinned() noexcept {}
void DeviceStagedSync::allreduce_sum(float*, std::size_t) { throw_staging_not_built(); }
void DeviceStagedSync::allreduce_staged(float*, std::size_t) { throw_staging_not_built(); }
void DeviceStagedSync::prepare_pipeline(const float*, std::size_t) { throw_staging_not_built(); }
void DeviceStagedSync::use_device_of(const float*) { throw_staging_not_built(); }
void DeviceStagedSync::release_pipeline() noexcept {}

#endif  // HARNESS_WITH_CUDA

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

std::vector<StagingLeverStep> staging_lever_steps(const GradientSync& backend, bool on_device,
                                                  std::size_t chunk_floats) {
  if (exchange_path(backend, on_device) != "pinned host staging") return {};
  return staging_lever_steps(chunk_floats * sizeof(float), backend.staging_lever_settings(), backend.host_threads(),
                             backend.scatters_sums());
}

}  // namespace harness
