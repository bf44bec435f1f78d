// GradientSync: how ranks combine their gradients. One implementation per file pair in this
// folder, chosen by the experiment's "backend" setting through make_gradient_sync().
//
// Contract:
// - Collective: every rank of the communicator calls each method with the same element count,
//   in the same order. Buffers are host memory, owned by the caller, float32.
// - One call at a time: from the training thread, or with overlap from the communication thread
//   while the training thread makes no MPI call (MPI_THREAD_SERIALIZED).
// - Errors: a failed MPI call throws CommError carrying MPI_Error_string.
#pragma once

#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
};

struct BackendInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help and error messages
  std::unique_ptr<GradientSync> (*make)(MPI_Comm communicator);
};

// The name -> factory table, in the order --help lists it.
const std::vector<BackendInfo>& backend_table();
// The names alone, in the same order (for sweeps over every backend).
std::vector<std::string> backend_names();
// Throws ConfigError listing the valid names when `name` is unknown.
const BackendInfo& find_backend(std::string_view name);
std::unique_ptr<GradientSync> make_gradient_sync(std::string_view name, MPI_Comm communicator);

// Throws CommError("<operation>: <MPI_Error_string>") when `code` is not MPI_SUCCESS.
void check_mpi(int code, std::string_view operation);

}  // namespace harness
