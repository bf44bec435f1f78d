// GradientSync: how ranks combine their gradients. One implementation per file pair in this
// folder, chosen by the experiment's "backend" setting through the table in registry.h.
//
// Contract:
// - Collective: every rank of the communicator calls each method with the same element count,
//   in the same order. Buffers are host memory (device memory only for a backend whose table
//   entry accepts device pointers, see device_staging.h), owned by the caller, float32.
// - One call at a time: from the training thread, or with overlap from the communication thread
//   while the training thread makes no MPI call (MPI_THREAD_SERIALIZED).
// - Errors: a failed MPI call throws CommError carrying MPI_Error_string.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backends/communicator.h"
#include "backends/staging_levers.h"

namespace harness {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual std::string_view name() const = 0;
  // Replaces `buffer` on every rank with the elementwise sum of all ranks' buffers.
  virtual void allreduce_sum(std::span<float> buffer) = 0;
  // Host memory for `count` floats that allreduce_sum reduces faster than any other (`shm`
  // reduces it in place, without copies), or null when all memory is alike (the default). The
  // memory lives as long as the returned pointer or a copy of it, even past the backend. Every
  // rank calls it with the same count, and passes the same spans of it (same offsets and sizes)
  // to allreduce_sum, or none does.
  virtual std::shared_ptr<float> allocate_buffer(std::size_t /*count*/) { return nullptr; }
  // False when there is nothing to exchange: the sync of a one-rank communicator, whatever the
  // backend (make_gradient_sync below). Its allreduce_sum leaves the buffer as it is, and callers
  // skip even their own copies around it (no device staging, no communication thread).
  virtual bool exchanges() const { return true; }
  // The threads of this rank that do the backend's arithmetic on host memory (shm's and hier's
  // shm_reduce_threads; 1 for the others): the comm benchmark's memory probes run as many.
  virtual int host_threads() const { return 1; }

  // Staging's shortcut (device_staging.h): a backend whose sums end in memory that every rank of
  // the node maps (shm with shm_copy_engine_gathers) may leave each slice's sum only where its
  // owner computed it, and say where, instead of writing every sum into every rank's buffer: the
  // GPU's copy engine gathers the pieces, and the host saves a pass over the buffer.
  // Whether allreduce_sum_scattered() scatters (false: it is allreduce_sum, the default).
  virtual bool scatters_sums() const { return false; }
  // The memory every rank of the node maps around allocate_buffer()'s `buffer` (all ranks'
  // segments), which staging page-locks for its copy engine; empty when the backend does not
  // scatter. Page-aligned.
  virtual std::span<std::byte> scattered_memory(const float* /*buffer*/) { return {}; }
  // Sums `buffer` across ranks, like allreduce_sum, but may leave the sums in pieces elsewhere:
  // the returned spans, in order, hold the buffer's sums (one span, `buffer` itself, by
  // default). Collective. The pieces stay valid until every rank has called end_scattered(),
  // which the caller does once it has read them (after one or several calls): until then no rank
  // may write into memory passed to allreduce_sum_scattered.
  virtual std::vector<std::span<const float>> allreduce_sum_scattered(std::span<float> buffer) {
    allreduce_sum(buffer);
    return {buffer};
  }
  // Collective: every rank has read the pieces of its allreduce_sum_scattered calls.
  virtual void end_scattered() {}

  // Staging's levers by buffer size (staging_levers.h): the backend's settings of them ("auto" or
  // a value), from which staging picks, for each buffer it stages, how many of host_threads() sum
  // it (use_host_threads) and whether allreduce_sum_scattered gathers it. By default both set to
  // what the backend has: host_threads() and scatters_sums(), at every size.
  virtual StagingLeverSettings staging_lever_settings() const {
    return StagingLeverSettings::fixed(host_threads(), scatters_sums());
  }
  // The calls that follow sum on `threads` of host_threads() (1 to host_threads()); a local
  // choice, no collective. A backend with one thread has nothing to choose.
  virtual void use_host_threads(int /*threads*/) {}
};

// The backend named `name` (registry.h) over `communicator`, with its settings' defaults.
// Collective. Throws ConfigError for an unknown name. On a one-rank communicator every backend is
// one whose exchanges() is false: the sum over one rank is its own buffer, so it sets up nothing
// (no segments, no store, no MPI calls) and an injected delay, which waits inside calls that
// exchange, waits nowhere.
std::unique_ptr<GradientSync> make_gradient_sync(std::string_view name, const Communicator& communicator);
// The backend named `name` with a point's options (backend_options.h), waiting
// inject_comm_delay_us inside every call when that is set (injected_delay.h).
struct BackendOptions;
std::unique_ptr<GradientSync> make_gradient_sync(std::string_view name, const BackendOptions& options,
                                                 const Communicator& communicator);

}  // namespace harness
