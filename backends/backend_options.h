// What a backend knows of the point it serves, and the settings it owns, in types of its own: the
// study side (harness/study/backend_options.h) fills BackendOptions from a point's settings and
// turns each BackendSetting into a row of the settings table, as c10d's callers fill a process
// group's options. So backends/ depends on nothing of the orchestrator's, and a new backend
// (nccl, cuda_ipc) declares what it needs here without touching the study.
#pragma once

#include <string>
#include <string_view>

#include "harness/common/json.h"

namespace harness {

struct BackendOptions {
  bool training = true;  // a training point; false: the communication benchmark
  int ranks = 1;
  int nodes = 1;
  // The most ranks on one node: ranks_per_node where the point sets it, else as a block
  // distribution places them (the first nodes take ceil(ranks / nodes)).
  int ranks_per_node = 1;
  int threads_per_rank = 0;  // the point's setting; 0: cores / ranks, resolved at launch
  std::string device = "cpu";  // where the buffers live: "cpu" (host memory) or "cuda"
  // The workload when it hands the backend host memory whatever the device (kmeans), or "".
  std::string host_memory_workload;
  // The GPUs each node's ranks see (CUDA_VISIBLE_DEVICES respected), where the launcher knows
  // them before launch; -1: unknown (a backend that needs a GPU per rank checks at run time).
  int gpus_per_node = -1;
  double inject_comm_delay_us = 0;  // waited inside every call (injected_delay.h)
  Json owned = Json::object();      // the values of the backend's own settings, by key

  // An owned setting's value, or `fallback` when the point leaves it at its default.
  template <typename T>
  T option(std::string_view key, T fallback) const {
    const auto found = owned.find(std::string(key));
    return found == owned.end() ? fallback : found->template get<T>();
  }
};

// A setting a backend owns (ps_server_trains, hier_allreduce_below_bytes,
// cuda_ipc_one_shot_below_bytes). Backends may share one (shm_reduce_threads: shm's and hier's):
// the settings table lists it once, as the first backend declares it. `normalise` checks a value
// and returns it as records store it, throwing ConfigError naming `where`.
struct BackendSetting {
  std::string_view key;
  std::string_view expected;     // what a valid value looks like, for messages and docs
  std::string_view help;         // one line for --help and schema.json
  std::string_view json_schema;  // the value's JSON Schema, for schema.json
  Json fallback;                 // the default
  Json (*normalise)(const Json& value, const std::string& where) = nullptr;
  // A size in bytes below which the backend uses another algorithm of its own (cuda_ipc's
  // one-shot kernel): the comm report then also compares the backend's configurations that differ
  // only in this setting with each other, not only with MPI_Allreduce (comm_report.h).
  bool own_crossover = false;
  // Read only for points where this holds (nullptr: every point of the backend), e.g. where
  // buffers on a GPU are staged through host memory: elsewhere a point's value changes nothing,
  // and a sweep over it would measure the same thing twice.
  bool (*read_where)(const BackendOptions& options) = nullptr;
};

}  // namespace harness
