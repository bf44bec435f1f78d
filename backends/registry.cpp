#include "backends/registry.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "backends/cuda_ipc_allreduce.h"
#include "backends/gloo_allreduce.h"
#include "backends/hierarchical_allreduce.h"
#include "backends/nccl_allreduce.h"
#include "backends/ring_allreduce.h"
#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/option_rows.h"
#include "harness/common/name_table.h"

namespace harness {
namespace {

// The parameter server's rank 0 trains as well as serving only when asked: the course project's
// design is a server that only serves.
constexpr std::string_view kServerTrainsKey = "ps_server_trains";

bool server_trains(const BackendOptions& options) { return options.option(kServerTrainsKey, false); }

std::vector<BackendSetting> parameter_server_settings() {
  return {{.key = kServerTrainsKey,
           .expected = "true or false",
           .help = "backend \"ps\": rank 0 trains too (false: it only serves, p ranks give p-1 workers)",
           .json_schema = R"({"type": "boolean"})",
           .fallback = false,
           .normalise = [](const Json& value, const std::string& where) { return Json(read_boolean(value, where)); },
           // The comm benchmark sums every rank's buffer: there is no training for rank 0 to skip.
           .read_where = [](const BackendOptions& options) { return options.training; }}};
}

std::string parameter_server_problem(const BackendOptions& options) {
  // Only training has a rank that serves without computing.
  if (!options.training || server_trains(options) || options.ranks >= 2) return "";
  return "ranks: backend \"ps\" without ps_server_trains needs at least 2 ranks (rank 0 only serves); "
         "expected ranks >= 2 or \"ps_server_trains\": true";
}

// Where `hier` hands small buffers to MPI_Allreduce across nodes: a latency-bound message gains
// nothing from shared memory and pays for the extra phases.
constexpr std::string_view kHierMpiBelowKey = "hier_allreduce_below_bytes";

// A crossover setting in bytes (hier's, ring's): a non-negative integer, 0 for "never".
constexpr IntegerBounds kCrossoverBytes{0};

BackendSetting crossover_bytes_setting(std::string_view key, std::string_view help, std::size_t fallback) {
  return {.key = key,
          .expected = "a non-negative integer",
          .help = help,
          .json_schema = integer_schema(kCrossoverBytes),
          .fallback = Json(fallback),
          .normalise = [](const Json& value, const std::string& where) {
            return Json(read_integer(value, where, kCrossoverBytes, "a non-negative integer"));
          }};
}

// The threads with which each rank of shm and hier sums its slice (reduction_threads.h), and
// shm's sums gathered by the copy engine: staging's levers, "auto" (by the staged buffer's size,
// staging_levers.h) unless set.
constexpr std::string_view kShmReduceThreadsKey = "shm_reduce_threads";
constexpr IntegerBounds kReduceThreads{1, 256};
constexpr std::string_view kAuto = "auto";

BackendSetting shm_reduce_threads_setting() {
  return {.key = kShmReduceThreadsKey,
          .expected = "\"auto\" or an integer from 1 to 256",
          .help =
              "backends \"shm\" and \"hier\": threads with which each rank sums its slice of the node's "
              "buffers (large buffers only; above 1, at most threads_per_rank, which must be set: they are "
              "the rank's own cores); \"auto\": one on host memory, and for buffers staged from a GPU up to 4 "
              "(at most threads_per_rank) from 16 MiB up, one below",
          .json_schema = R"({"anyOf": [{"const": "auto"}, {"type": "integer", "minimum": 1, "maximum": 256}]})",
          .fallback = Json(kAuto),
          .normalise = [](const Json& value, const std::string& where) {
            if (value == Json(kAuto)) return value;
            return Json(read_integer(value, where, kReduceThreads, "\"auto\" or an integer from 1 to 256"));
          }};
}

// Whether staged shm leaves each slice's sum in its owner's segment for the GPU's copy engine to
// gather (SharedMemoryAllreduce's scattered sums).
constexpr std::string_view kShmCopyEngineGathersKey = "shm_copy_engine_gathers";

BackendSetting shm_copy_engine_gathers_setting() {
  return {.key = kShmCopyEngineGathersKey,
          .expected = "\"auto\", true or false",
          .help =
              "backend \"shm\", device cuda: each rank writes its slice's sum into its own segment only, and "
              "every rank's copy engine gathers the sums from their owners' segments (one pass over host "
              "memory less; false: every sum is written into every segment, each rank copies its own back); "
              "\"auto\": for staged buffers from 16 MiB up",
          .json_schema = R"({"anyOf": [{"const": "auto"}, {"type": "boolean"}]})",
          .fallback = Json(kAuto),
          .normalise =
              [](const Json& value, const std::string& where) {
                if (value != Json(kAuto) && !value.is_boolean()) fail_expected(where, "\"auto\", true or false", value);
                return value;
              },
          .read_where = [](const BackendOptions& options) { return options.device == "cuda"; }};
}

// The reduction threads run on the rank's own cores, which ranks x threads_per_rank counts (the
// oversubscription check, the records): more of them than threads_per_rank, or than the cores
// / ranks that threads_per_rank 0 resolves to on whatever machine runs the point, would run on
// cores nobody counts.
std::string reduce_threads_problem(const BackendOptions& options) {
  const std::optional<int> set = staging_lever_settings(options).reduce_threads;
  if (!set) return "";  // "auto" takes at most threads_per_rank
  const int threads = *set;
  if (threads <= 1 || (options.threads_per_rank > 0 && threads <= options.threads_per_rank)) return "";
  if (options.threads_per_rank <= 0) {
    return fmt::format("shm_reduce_threads: {} threads need threads_per_rank set (they run on the rank's own "
                       "cores, which ranks x threads_per_rank counts); expected threads_per_rank {} or more",
                       threads, threads);
  }
  return fmt::format("shm_reduce_threads: {} threads outnumber the rank's threads_per_rank {} (they run on the "
                     "rank's own cores); expected at most {}, or threads_per_rank {}",
                     threads, options.threads_per_rank, options.threads_per_rank, threads);
}

std::vector<BackendSetting> hierarchical_settings() {
  BackendSetting crossover = crossover_bytes_setting(kHierMpiBelowKey,
                                                     "backend \"hier\" across nodes: buffers smaller than this many "
                                                     "bytes go through MPI_Allreduce (0: never; the crossover of your "
                                                     "network, measured as in experiments/multinode.json)",
                                                     kHierMpiBelowBytes);
  // On one node hier is shm, whatever the size.
  crossover.read_where = [](const BackendOptions& options) { return options.nodes > 1; };
  return {crossover, shm_reduce_threads_setting()};
}

std::size_t hierarchical_hands_to_mpi_below_bytes(const BackendOptions& options) {
  // On one node hier is shm, whatever the size.
  return options.nodes > 1 ? hier_mpi_below_bytes(options) : 0;
}

// Where the ring hands small buffers to MPI_Allreduce, in bytes per rank (ring_allreduce.h).
constexpr std::string_view kRingMpiBelowChunkKey = "ring_allreduce_below_chunk_bytes";

std::vector<BackendSetting> ring_settings() {
  return {crossover_bytes_setting(kRingMpiBelowChunkKey,
                                  "backend \"ring\": buffers whose chunk (buffer bytes / ranks) is smaller than this "
                                  "many bytes go through MPI_Allreduce (0: never; measure the crossover on your "
                                  "machine with the comm benchmark and this set to 0, as "
                                  "experiments/scale_comm.json does)",
                                  kRingMpiBelowChunkBytes)};
}

std::size_t ring_hands_to_mpi_below_bytes(const BackendOptions& options) {
  // ring_hands_to_mpi(): chunk = bytes / ranks, so below chunk * ranks (saturated: a huge setting
  // means every size).
  const std::size_t chunk = ring_mpi_below_chunk_bytes(options);
  const auto ranks = static_cast<std::size_t>(std::max(1, options.ranks));
  if (options.ranks <= 1) return 0;
  return chunk > SIZE_MAX / ranks ? SIZE_MAX : chunk * ranks;
}

// Where `cuda_ipc` changes from its one-shot kernel (every rank sums the whole buffer: one arrival,
// lowest latency) to its two-shot reduce-scatter and all-gather (less memory traffic per rank from
// 3 ranks up); a crossover between its own kernels, which the comm report compares.
constexpr std::string_view kCudaIpcOneShotBelowKey = "cuda_ipc_one_shot_below_bytes";
// How cuda_ipc's ranks wait for each other between its phases: on the GPU, or through the host.
constexpr std::string_view kCudaIpcDeviceArrivalsKey = "cuda_ipc_device_arrivals";

std::vector<BackendSetting> cuda_ipc_settings() {
  BackendSetting setting = crossover_bytes_setting(
      kCudaIpcOneShotBelowKey,
      "backend \"cuda_ipc\": buffers smaller than this many bytes go through its one-shot kernel, larger ones "
      "through reduce-scatter + all-gather (0: never one-shot; the crossover a comm run measures, as in "
      "experiments/gpu/comm_cuda.json)",
      kCudaIpcOneShotBelowBytes);
  setting.own_crossover = true;
  BackendSetting arrivals{
      .key = kCudaIpcDeviceArrivalsKey,
      .expected = "true or false",
      .help = "backend \"cuda_ipc\": ranks wait for each other on the GPU's stream (cuStreamWaitValue32), without "
              "a round trip through the host (false: cudaStreamSynchronize and an MPI barrier at each arrival)",
      .json_schema = R"({"type": "boolean"})",
      .fallback = true,
      .normalise = [](const Json& value, const std::string& where) { return Json(read_boolean(value, where)); }};
  return {setting, arrivals};
}

// Device memory per byte of the buffer that each cuda_ipc rank moves (a GPU writes whole lines
// without reading them): the copy in (read 1, write 1), then one-shot (read p, write 1) or two-shot
// (read 1, write 1/p; read 1, write 1). The less of the two, the least it moves at any size.
double cuda_ipc_device_traffic(int ranks) {
  const double p = std::max(1, ranks);
  return std::min(2 + p + 1, 2 + 1 + 1 / p + 2);
}

std::string shared_memory_problem(const BackendOptions& options) {
  if (options.nodes <= 1) return reduce_threads_problem(options);
  return fmt::format("nodes: backend \"shm\" needs every rank on one node (it reduces through shared memory), "
                     "got {} nodes; expected nodes 1, or backend \"hier\" (shared memory inside each node)",
                     options.nodes);
}

std::string gloo_unavailable() {
  return gloo_available() ? ""
                          : "backend \"gloo\" is not in this build (libgloo-dev was missing at "
                            "configure time; install it with bash .ci/install-deps and configure "
                            "again)";
}

// Memory traffic per byte of the buffer (BackendInfo::memory_traffic), counting as the cache does:
// a store to a line not just read costs a read as well (write-allocate), so a transport's copy
// moves 3 bytes per byte (read the source, read and write the destination), and adding a received
// chunk into the buffer 3 (read both, write the first back in place).
// The ring: p-1 received chunks of 1/p copied (3) and added (3), p-1 copied into place (3).
double ring_traffic(int ranks) { return 9.0 * (ranks - 1) / ranks; }
// The parameter server's rank 0 copies in (3) and adds (3) p-1 whole buffers; the peers copy the
// sum out.
double parameter_server_traffic(int ranks) { return 6.0 * (ranks - 1); }
// shm: each rank reads its slice of all p segments (n) and writes the sum into the lines it has
// just read (n): no copy, no write-allocate. One rank has nothing to add.
double shared_memory_traffic(int ranks) { return ranks > 1 ? 2.0 : 0.0; }

}  // namespace

StagingLeverSettings staging_lever_settings(const BackendOptions& options) {
  StagingLeverSettings settings;
  const Json threads = options.option<Json>(kShmReduceThreadsKey, Json(kAuto));
  if (threads.is_number_integer()) settings.reduce_threads = threads.get<int>();
  const Json gathers = options.option<Json>(kShmCopyEngineGathersKey, Json(kAuto));
  if (gathers.is_boolean()) settings.copy_engine_gathers = gathers.get<bool>();
  return settings;
}

int shm_reduce_threads(const BackendOptions& options) {
  return reduction_threads_started(staging_lever_settings(options), options.device == "cuda", options.threads_per_rank);
}

bool shm_copy_engine_gathers(const BackendOptions& options) {
  return copy_engine_may_gather(staging_lever_settings(options), options.device == "cuda");
}

std::size_t hier_mpi_below_bytes(const BackendOptions& options) {
  return options.option<std::size_t>(kHierMpiBelowKey, kHierMpiBelowBytes);
}

std::size_t ring_mpi_below_chunk_bytes(const BackendOptions& options) {
  return options.option<std::size_t>(kRingMpiBelowChunkKey, kRingMpiBelowChunkBytes);
}

std::size_t cuda_ipc_one_shot_below_bytes(const BackendOptions& options) {
  return options.option<std::size_t>(kCudaIpcOneShotBelowKey, kCudaIpcOneShotBelowBytes);
}

bool cuda_ipc_device_arrivals(const BackendOptions& options) {
  return options.option<bool>(kCudaIpcDeviceArrivalsKey, true);
}

const std::vector<BackendInfo>& backend_table() {
  static const std::vector<BackendInfo> table = {
      {.name = "allreduce",
       .summary = "MPI_Allreduce (in place, SUM) on one fused buffer",
       .accepts_device_pointers = true,
       .memory_traffic = ring_traffic},  // Open MPI's choice varies; its large-buffer algorithms move as much
      {.name = "ring",
       .summary = "bandwidth-optimal ring allreduce (reduce-scatter + allgather) over MPI point-to-point; "
                  "small buffers through MPI_Allreduce",
       .settings = ring_settings,
       .memory_traffic = ring_traffic,
       .hands_to_mpi_below_bytes = ring_hands_to_mpi_below_bytes},
      {.name = "ps",
       .summary = "parameter server: rank 0 receives, sums and sends back with MPI_Send/MPI_Recv",
       .root_only_serves = [](const BackendOptions& options) { return !server_trains(options); },
       .problem = parameter_server_problem,
       .settings = parameter_server_settings,
       .memory_traffic = parameter_server_traffic,
       .busiest_rank_works_alone = true},
      {.name = "shm",
       .summary = "zero-copy shared-memory allreduce: each rank sums its slice of every rank's "
                  "buffer in place (ranks on one node)",
       .problem = shared_memory_problem,
       .settings = [] { return std::vector<BackendSetting>{shm_reduce_threads_setting(), shm_copy_engine_gathers_setting()}; },
       .memory_traffic = shared_memory_traffic},
      {.name = "hier",
       .summary = "hierarchical allreduce: shared memory inside each node (as shm), a pipelined "
                  "ring between nodes for every local rank's slice at once",
       .problem = reduce_threads_problem,
       .settings = hierarchical_settings,
       .memory_traffic = shared_memory_traffic,  // on one node it is shm
       .hands_to_mpi_below_bytes = hierarchical_hands_to_mpi_below_bytes},
      {.name = "gloo",
       .summary = "Gloo allreduce through LibTorch's c10d::ProcessGroupGloo (what PyTorch DDP uses)",
       .unavailable_reason = gloo_unavailable,
       .memory_traffic = ring_traffic},  // a ring, plus copies of its own
      {.name = "nccl",
       .summary = "NCCL's ncclAllReduce on GPU memory (device \"cuda\", a GPU per rank; what PyTorch DDP "
                  "and Horovod use on GPUs)",
       .device_memory_only = true,
       .problem = nccl_problem,
       // No memory_traffic: its bound is the GPU's memory and links, not the host's.
       .unavailable_reason = nccl_unavailable_reason},
      {.name = "cuda_ipc",
       .summary = "allreduce in GPU memory through CUDA IPC between the ranks of one node: one-shot below "
                  "cuda_ipc_one_shot_below_bytes, reduce-scatter + all-gather above (device \"cuda\"; ranks may "
                  "share a GPU)",
       .device_memory_only = true,
       .problem = cuda_ipc_problem,
       .unavailable_reason = cuda_ipc_unavailable_reason,
       .settings = cuda_ipc_settings,
       // No memory_traffic: its bound is the GPU's memory, not the host's (cuda_ipc_allreduce.h).
       .device_memory_traffic = cuda_ipc_device_traffic},
  };
  return table;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& info : backend_table()) names.emplace_back(info.name);
  return names;
}

std::vector<std::string> host_memory_backend_names() {
  std::vector<std::string> names;
  for (const auto& info : backend_table()) {
    if (!info.device_memory_only) names.emplace_back(info.name);
  }
  return names;
}

const BackendInfo& find_backend(std::string_view name) {
  return find_by_name(backend_table(), name, "backend");
}

const BackendInfo* backend_or_null(std::string_view name) {
  for (const auto& info : backend_table()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

}  // namespace harness
