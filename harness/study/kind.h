// What a point does: train a workload data-parallel ("train"), or benchmark the backend's
// allreduce alone over message sizes ("comm", as nccl-tests does). Everything that differs by kind
// is chosen by this enum in one place per module: the settings the kind owns (here), what
// validation checks (validate.cpp), what the rank program runs (rank/worker.cpp), and how results
// are verified and reported (results/report.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "harness/study/setting_row.h"

namespace harness {

enum class Kind { kTrain, kComm };

// "train" or "comm", as experiment files and records spell it.
std::string_view kind_name(Kind kind);

// Whether a point of `kind` ("train", "comm") and `backend` runs in harness-comm-worker, the rank
// program without LibTorch, rather than harness-worker: comm points of every backend but gloo
// (LibTorch's code). LibTorch's start-up took 0.7 s of a 2-rank comm point's 1.2 s.
inline bool runs_without_libtorch(std::string_view kind, std::string_view backend) {
  return kind == "comm" && backend != "gloo";
}

// Kind "comm": message sizes from min_bytes to max_bytes (× size_factor), the reductions per size.
struct CommOptions {
  int64_t min_bytes = 4;
  int64_t max_bytes = int64_t{64} << 20;
  int size_factor = 4;
  int iterations = 20;         // timed reductions per size
  int warmup_iterations = 5;   // untimed reductions per size, first
};

CommOptions comm_options(const PointSettings& settings);
// The comm_* rows of the settings table.
std::vector<SettingRow> comm_setting_rows();

}  // namespace harness
