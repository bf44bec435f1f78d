// The backend table: what the rest of the harness may know about a backend, by name: its
// capabilities (rather than comparing names), the settings it owns, whether this build has it.
// Free of MPI and LibTorch headers, and linked without LibTorch, so the orchestrator validates
// experiments with it and never loads LibTorch. Each backend's constructor is in the rank
// program's half, factories.h.
//
// Adding a backend = a file pair in this folder + an entry here in registry.cpp + one in
// factories.cpp (a test checks that both tables name the same backends) + a CMake line + a test.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend_options.h"
#include "backends/staging_levers.h"

namespace harness {

struct BackendInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help and error messages
  // MPI itself does the arithmetic, so device memory may go to a CUDA-aware MPI as it is
  // (the other backends add floats in host code and need the gradients staged through the host).
  bool accepts_device_pointers = false;
  // Reduces GPU memory only, with a library of its own on the GPU (nccl): the device path hands it
  // device pointers whatever the MPI library, and host memory never reaches it (its `problem`
  // refuses device "cpu" and workloads that keep their sums on the host).
  bool device_memory_only = false;
  // Whether rank 0 only serves and computes no gradients, for these settings (the parameter
  // server unless ps_server_trains); null: every rank trains.
  bool (*root_only_serves)(const BackendOptions& options) = nullptr;
  // Why these settings cannot run with this backend, starting with the setting at fault
  // ("ranks: ..."), or "" (checked before launch).
  std::string (*problem)(const BackendOptions& options) = nullptr;
  // Why this build lacks the backend, or "" (gloo without libgloo-dev at configure time).
  std::string (*unavailable_reason)() = nullptr;
  // The settings this backend owns (null: none); the study makes them rows of the settings table.
  std::vector<BackendSetting> (*settings)() = nullptr;
  // Bytes the busiest rank moves through memory per byte of the buffer, for `ranks` ranks on one
  // node, a store to a line not just read counting as a read too (write-allocate): what bounds
  // the backend where memory, not a network, is the limit (the comm table's "memory" column,
  // registry.cpp states each). Null: no such figure.
  double (*memory_traffic)(int ranks) = nullptr;
  // Whether that busiest rank moves its bytes while the others mostly wait (the parameter
  // server's rank 0), so that one core's share of the memory bandwidth, not every core's at once,
  // is its rate: the comm table then measures it against the one-core probes.
  bool busiest_rank_works_alone = false;
  // The buffer size in bytes below which the backend hands a reduction to MPI_Allreduce for these
  // settings (its crossover setting: ring's, hier's across nodes), 0 for none; null: never. The
  // cost model leaves those sizes out of the backend's fit: they time MPI, not the backend.
  std::size_t (*hands_to_mpi_below_bytes)(const BackendOptions& options) = nullptr;
  // On device "cuda", for a backend that reduces in device memory: bytes the busiest rank moves
  // through its GPU's memory per byte of the buffer (reads and writes; a GPU writes whole lines
  // without reading them). The comm table's "gpu" column takes at least 2, what any in-place
  // allreduce moves (read the buffer, write the sums), where this is null or less.
  double (*device_memory_traffic)(int ranks) = nullptr;
};

// The table, in the order --help lists it.
const std::vector<BackendInfo>& backend_table();
// The names alone, in the same order (for sweeps over every backend).
std::vector<std::string> backend_names();
// The names of the backends that reduce host memory (all but the device_memory_only ones), in
// the same order: what runs with device "cpu".
std::vector<std::string> host_memory_backend_names();
// Throws ConfigError listing the valid names when `name` is unknown.
const BackendInfo& find_backend(std::string_view name);
// Null when `name` is unknown (records of a backend this build does not have).
const BackendInfo* backend_or_null(std::string_view name);

// The backends' own settings at a point, as their constructors read them (defaults where unset).
std::size_t hier_mpi_below_bytes(const BackendOptions& options);           // hier_allreduce_below_bytes
std::size_t ring_mpi_below_chunk_bytes(const BackendOptions& options);     // ring_allreduce_below_chunk_bytes
std::size_t cuda_ipc_one_shot_below_bytes(const BackendOptions& options);  // cuda_ipc_one_shot_below_bytes
bool cuda_ipc_device_arrivals(const BackendOptions& options);               // cuda_ipc_device_arrivals
// shm_reduce_threads and shm_copy_engine_gathers, "auto" as nullopt (staging_levers.h).
StagingLeverSettings staging_lever_settings(const BackendOptions& options);
// The reduction threads each rank of shm and hier starts (reduction_threads_started): with
// threads_per_rank 0 (resolved at launch), "auto" on device cuda counts kAutoReduceThreads.
int shm_reduce_threads(const BackendOptions& options);
// Whether shm keeps its sums where the copy engine can gather them (set true, or "auto", on cuda).
bool shm_copy_engine_gathers(const BackendOptions& options);

// How a point's buffers reach its backend, as records say it (`exchange_path`), when there is
// nothing to exchange (one rank: GradientSync::exchanges() is false).
inline constexpr std::string_view kNoExchangePath = "none (one rank)";

// Whether this build can use CUDA devices, and why not; MPI-free, for validation.
struct CudaStatus {
  bool built = false;  // the build has CUDA (HARNESS_WITH_CUDA), whatever this machine has
  bool usable = false;
  int devices = 0;
  std::string reason;  // why not usable; empty when usable
};
CudaStatus cuda_status();

// Whether an MPS control daemon serves this machine: the `control` pipe its clients connect
// through is in CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps). Ranks that share a GPU without
// it time-slice the GPU. Any build.
bool mps_control_running();

}  // namespace harness
