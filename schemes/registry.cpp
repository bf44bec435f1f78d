#include "schemes/registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "harness/common/json_values.h"

#include "harness/common/name_table.h"
#include "harness/study/owned_setting_rows.h"
#include "harness/study/settings.h"
#include "workloads/registry.h"

namespace harness {
namespace {

std::vector<SettingRow> local_sgd_settings() {
  return {owned_integer_setting("sync_every", "a positive integer",
                                "scheme local_sgd: steps each rank takes on "
                                "its own model between two averagings "
                                "of the models (1 = synchronous SGD)",
                                {1, 1000000}, kDefaultSyncEvery)};
}

// What local SGD cannot do: K-means has no SGD step, and overlapping the gradients' reduction with
// backward has nothing to overlap when no gradient is reduced.
std::optional<SettingProblem> local_sgd_check(const PointSettings& settings) {
  if (find_workload(settings.workload).algorithm != Algorithm::kDataParallelSgd) {
    return SettingProblem{"scheme", "expected \"sync\" for workload " + settings.workload +
                                        ": its iterations take no SGD steps to take locally"};
  }
  if (settings.overlap) {
    return SettingProblem{"overlap",
                          "expected false with scheme \"local_sgd\": it "
                          "reduces no gradients, so there is "
                          "no reduction to overlap with backward (the models "
                          "are averaged after the step)"};
  }
  return std::nullopt;
}

constexpr std::string_view kUnbounded = "unbounded";
constexpr IntegerBounds kStalenessBounds{0, 1000000};
constexpr std::string_view kStalenessExpected = "a non-negative integer or \"unbounded\"";

std::vector<SettingRow> async_ps_settings() {
  return {owned_integer_setting("ps_servers", "a positive integer",
                                "scheme async_ps: ranks that only serve, holding the parameters in contiguous "
                                "slices (ranks 0 to ps_servers-1); the others are workers",
                                {1, 1000000}, 1),
          owned_setting("max_staleness", kStalenessExpected,
                        "scheme async_ps: how many steps a worker may run ahead of the slowest (stale "
                        "synchronous parallel; 0: synchronous, \"unbounded\": fully asynchronous)",
                        R"({"anyOf": [{"const": "unbounded"}, {"type": "integer", "minimum": 0, "maximum": 1000000}]})",
                        Json(kUnbounded), [](const Json& value, const std::string& where) {
                          if (value == Json(kUnbounded)) return value;
                          return Json(read_integer(value, where, kStalenessBounds, kStalenessExpected));
                        })};
}

// What the asynchronous parameter server cannot do. Its servers and workers exchange with MPI
// point-to-point, the parameter server backend's transport: a collective backend has nothing to
// do in it, and its host-side servers hold no GPU model.
std::optional<SettingProblem> async_ps_check(const PointSettings& settings) {
  if (find_workload(settings.workload).algorithm != Algorithm::kDataParallelSgd) {
    return SettingProblem{"scheme", "expected \"sync\" for workload " + settings.workload +
                                        ": its iterations take no SGD steps for a server to apply"};
  }
  if (settings.backend != "ps") {
    return SettingProblem{"backend", "expected \"ps\" with scheme \"async_ps\" (its servers and workers exchange "
                                     "with MPI point-to-point, as the parameter server does), got \"" +
                                         settings.backend + "\""};
  }
  if (settings.option<bool>("ps_server_trains", false)) {
    return SettingProblem{"ps_server_trains", "expected false with scheme \"async_ps\": its servers only serve"};
  }
  if (settings.device != "cpu") {
    return SettingProblem{"device", "expected \"cpu\" with scheme \"async_ps\": its servers hold the model in host "
                                    "memory (GPU workers are not supported yet)"};
  }
  const int64_t servers = ps_servers(settings);
  if (servers >= settings.ranks) {
    return SettingProblem{"ps_servers", fmt::format("expected fewer servers than ranks (at least one rank must "
                                                    "train), got {} of {} ranks",
                                                    servers, settings.ranks)};
  }
  if (settings.overlap) {
    return SettingProblem{"overlap", "expected false with scheme \"async_ps\": its workers push whole gradients"};
  }
  if (settings.timeline) {
    return SettingProblem{"timeline", "expected false with scheme \"async_ps\": the trace follows synchronous steps"};
  }
  return std::nullopt;
}

constexpr std::string_view kBalanced = "balanced";
constexpr int kDefaultStages = 2;
constexpr int kDefaultMicroBatches = 4;
constexpr std::string_view kBoundariesExpected = "\"balanced\" or a list of increasing layer indices";

std::vector<SettingRow> pipeline_settings() {
  return {owned_integer_setting("pipeline_stages", "a positive integer",
                                "scheme pipeline: consecutive stages the network is split into, one rank each "
                                "(ranks = pipeline_stages x replicas of each stage)",
                                {1, 1000}, kDefaultStages),
          owned_integer_setting("micro_batches", "a positive integer",
                                "scheme pipeline: micro-batches each replica's batch is split into (1: plain model "
                                "parallelism, one batch passed from stage to stage)",
                                {1, 1000000}, kDefaultMicroBatches),
          owned_setting("pipeline_schedule", "\"gpipe\" or \"1f1b\"",
                        "scheme pipeline: gpipe (every micro-batch forward, then every one backward) or 1f1b "
                        "(after a warm-up one forward, one backward: at most pipeline_stages micro-batches held)",
                        R"({"enum": ["gpipe", "1f1b"]})", Json(k1f1b),
                        [](const Json& value, const std::string& where) {
                          if (value != Json(kGpipe) && value != Json(k1f1b)) {
                            fail_expected(where, "\"gpipe\" or \"1f1b\"", value);
                          }
                          return value;
                        }),
          owned_setting("stage_boundaries", kBoundariesExpected,
                        "scheme pipeline: the first layer of each stage after the first (pipeline_stages - 1 "
                        "increasing indices into the network's layers), or \"balanced\": cut where the forward "
                        "and backward time of each layer, measured on rank 0 before training, balances the stages",
                        R"({"anyOf": [{"const": "balanced"}, {"type": "array", "items": {"type": "integer", "minimum": 1}}]})",
                        Json(kBalanced), [](const Json& value, const std::string& where) {
                          if (value == Json(kBalanced)) return value;
                          if (!value.is_array()) fail_expected(where, kBoundariesExpected, value);
                          Json layers = Json::array();
                          for (std::size_t i = 0; i < value.size(); ++i) {
                            layers.push_back(read_integer(value[i], fmt::format("{}[{}]", where, i),
                                                          IntegerBounds{1, 1000000}, "a layer index from 1"));
                          }
                          return layers;
                        })};
}

// What the pipeline cannot do, or what does not add up: the stages, micro-batches and ranks.
std::optional<SettingProblem> pipeline_check(const PointSettings& settings) {
  const WorkloadInfo& workload = find_workload(settings.workload);
  const int layers = workload.chain_layers != nullptr ? workload.chain_layers(settings) : 0;
  if (layers == 0) {
    return SettingProblem{"scheme", fmt::format("expected \"sync\" for workload {}{}: its network is not a chain of "
                                                "layers to split into stages",
                                                settings.workload,
                                                settings.engine.empty() ? "" : " engine " + settings.engine)};
  }
  const int stages = pipeline_stages(settings);
  if (stages > layers) {
    return SettingProblem{"pipeline_stages", fmt::format("expected at most {} stages (the layers of {}), got {}", layers,
                                                         settings.workload, stages)};
  }
  if (settings.ranks % stages != 0) {
    return SettingProblem{"ranks", fmt::format("expected a multiple of pipeline_stages ({}): ranks are stages x "
                                               "replicas, got {}",
                                               stages, settings.ranks)};
  }
  const int replicas = settings.ranks / stages;
  const int64_t batch = per_rank_batch(settings, replicas);
  const int parts = micro_batches(settings);
  if (batch % parts != 0) {
    return SettingProblem{"micro_batches", fmt::format("expected a divisor of the batch of each replica ({} samples), "
                                                       "got {}",
                                                       batch, parts)};
  }
  if (const auto boundaries = stage_boundaries(settings)) {
    if (static_cast<int>(boundaries->size()) != stages - 1) {
      return SettingProblem{"stage_boundaries", fmt::format("expected one layer index per stage after the first "
                                                            "({}), got {}",
                                                            stages - 1, boundaries->size())};
    }
    int previous = 0;
    for (const int first : *boundaries) {
      if (first <= previous || first >= layers) {
        return SettingProblem{"stage_boundaries", fmt::format("expected increasing layer indices from 1 to {} (the "
                                                              "first layer of each stage after the first), got {}",
                                                              layers - 1, Json(*boundaries).dump())};
      }
      previous = first;
    }
  }
  if (settings.overlap) {
    return SettingProblem{"overlap", "expected false with scheme \"pipeline\": a stage's gradients are complete only "
                                     "after its last micro-batch's backward, and its replicas average them then"};
  }
  if (replicas > 1 && settings.backend == "ps" && !settings.option<bool>("ps_server_trains", false)) {
    return SettingProblem{"ps_server_trains", "expected true with scheme \"pipeline\" and backend \"ps\": every "
                                              "replica of a stage computes its micro-batches"};
  }
  return std::nullopt;
}

}  // namespace

const std::vector<SchemeInfo>& scheme_table() {
  static const std::vector<SchemeInfo> table = {
      {"sync",
       "synchronous data parallelism: every step's gradients are averaged over "
       "the training ranks",
       nullptr, nullptr},
      {"local_sgd",
       "local SGD (lazy update): every rank takes sync_every steps on its own "
       "model, then the models are averaged "
       "with the point's backend",
       local_sgd_settings, local_sgd_check},
      {"async_ps",
       "asynchronous parameter server: ps_servers ranks hold the parameter slices and apply each "
       "pushed gradient; workers take batches on demand, at most max_staleness steps ahead of the slowest",
       async_ps_settings, async_ps_check},
      {"pipeline",
       "pipeline parallelism: the network split into pipeline_stages consecutive stages on as many ranks, "
       "micro_batches passed through them (gpipe or 1f1b), each stage's replicas averaging with the backend",
       pipeline_settings, pipeline_check},
  };
  return table;
}

const SchemeInfo& find_scheme(std::string_view name) { return find_by_name(scheme_table(), name, "scheme"); }

int sync_every(const PointSettings& settings) {
  return settings.scheme == "local_sgd" ? static_cast<int>(settings.option<int64_t>("sync_every", kDefaultSyncEvery))
                                        : 1;
}

int ps_servers(const PointSettings& settings) {
  return settings.scheme == "async_ps" ? static_cast<int>(settings.option<int64_t>("ps_servers", 1)) : 0;
}

std::optional<int64_t> max_staleness(const PointSettings& settings) {
  if (settings.scheme != "async_ps") return 0;
  const auto found = settings.options.find("max_staleness");
  if (found == settings.options.end() || found->is_string()) return std::nullopt;
  return found->get<int64_t>();
}

std::string staleness_text(const PointSettings& settings) {
  if (settings.scheme != "async_ps") return "";
  const std::optional<int64_t> bound = max_staleness(settings);
  return bound ? std::to_string(*bound) : std::string(kUnbounded);
}

int pipeline_stages(const PointSettings& settings) {
  return settings.scheme == "pipeline" ? static_cast<int>(settings.option<int64_t>("pipeline_stages", kDefaultStages))
                                       : 0;
}

int micro_batches(const PointSettings& settings) {
  return settings.scheme == "pipeline" ? static_cast<int>(settings.option<int64_t>("micro_batches", kDefaultMicroBatches))
                                       : 1;
}

std::string pipeline_schedule(const PointSettings& settings) {
  return settings.scheme == "pipeline" ? settings.option<std::string>("pipeline_schedule", std::string(k1f1b)) : "";
}

std::optional<std::vector<int>> stage_boundaries(const PointSettings& settings) {
  if (settings.scheme != "pipeline") return std::nullopt;
  const auto found = settings.options.find("stage_boundaries");
  if (found == settings.options.end() || found->is_string()) return std::nullopt;
  return found->get<std::vector<int>>();
}

int pipeline_replicas(const PointSettings& settings) {
  const int stages = pipeline_stages(settings);
  return stages > 0 ? std::max(1, settings.ranks / stages) : settings.ranks;
}

std::string scheme_label(const PointSettings& settings) {
  if (settings.scheme == "pipeline") {
    return fmt::format("pipeline {} {}x{} m={}", pipeline_schedule(settings), pipeline_stages(settings),
                       pipeline_replicas(settings), micro_batches(settings));
  }
  if (settings.scheme == "local_sgd") return fmt::format("local_sgd H={}", sync_every(settings));
  if (settings.scheme == "async_ps") {
    const std::string bound = staleness_text(settings);
    return fmt::format("async_ps s={}", bound == kUnbounded ? "inf" : bound);
  }
  return settings.scheme;
}

}  // namespace harness
