// The scheme table: how the ranks of a training point train together, by name, beside the backend,
// which only moves and sums the bytes a scheme hands it. `sync` is synchronous data parallelism
// (every step's gradients averaged over the ranks, harness/rank/trainer.h); `local_sgd` lets every
// rank take sync_every steps on its own model and then averages the models
// (harness/rank/local_sgd.h). Free of LibTorch, like the workload table: the orchestrator validates
// experiments with it.
//
// Adding a scheme = an entry in registry.cpp (its name, the settings it owns, what it refuses) +
// its rank half in harness/rank (a file pair, made in harness/rank/training_scheme.cpp) + a test of
// its equality with `sync` where it should be equal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/study/setting_row.h"
#include "workloads/registry.h"

namespace harness {

struct PointSettings;

inline constexpr std::string_view kDefaultScheme = "sync";

struct SchemeInfo {
  std::string_view name;     // the string used in experiment files
  std::string_view summary;  // one line for --help and the docs
  // The settings rows this scheme owns (null: none).
  std::vector<SettingRow> (*settings)() = nullptr;
  // What it refuses of a training point before launch (null: nothing).
  std::optional<SettingProblem> (*check)(const PointSettings& settings) = nullptr;
};

const std::vector<SchemeInfo>& scheme_table();
// Throws ConfigError listing the valid names when `name` is unknown.
const SchemeInfo& find_scheme(std::string_view name);

// local_sgd's sync_every's default: steps each rank takes on its own between two averagings.
inline constexpr int kDefaultSyncEvery = 8;
// The point's sync_every (local_sgd; 1 for every other scheme: each step synchronises).
int sync_every(const PointSettings& settings);

// async_ps's server ranks (ranks 0 to ps_servers-1; 0 for every other scheme).
int ps_servers(const PointSettings& settings);
// async_ps's bound on how far a worker runs ahead of the slowest, in steps; nullopt: "unbounded".
// 0 for every other scheme (they are synchronous).
std::optional<int64_t> max_staleness(const PointSettings& settings);
// As tables print it: the number or "unbounded" under async_ps, "" under every other scheme.
std::string staleness_text(const PointSettings& settings);
// The pipeline scheme's settings (harness/rank/pipeline.h). pipeline_stages is 0 for every other
// scheme; micro_batches 1.
int pipeline_stages(const PointSettings& settings);
int micro_batches(const PointSettings& settings);
inline constexpr std::string_view kGpipe = "gpipe";
inline constexpr std::string_view k1f1b = "1f1b";
// "gpipe" or "1f1b" under pipeline, "" under every other scheme.
std::string pipeline_schedule(const PointSettings& settings);
// The first layer of stages 1 to p-1, as the point gives them; nullopt: "balanced" (cut where the
// measured time of each layer balances the stages), and under every other scheme.
std::optional<std::vector<int>> stage_boundaries(const PointSettings& settings);
// A pipeline's replicas of each stage, ranks / pipeline_stages (the ranks under any other scheme).
int pipeline_replicas(const PointSettings& settings);

// The scheme with its own setting, as tables and plots name it: "sync", "local_sgd H=8",
// "async_ps s=2", "async_ps s=inf", "pipeline 1f1b 4x1 m=8" (stages x replicas).
std::string scheme_label(const PointSettings& settings);

}  // namespace harness
