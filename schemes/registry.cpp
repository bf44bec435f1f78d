#include "schemes/registry.h"

#include <fmt/format.h>

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

std::string scheme_label(const PointSettings& settings) {
  if (settings.scheme == "local_sgd") return fmt::format("local_sgd H={}", sync_every(settings));
  if (settings.scheme == "async_ps") {
    const std::string bound = staleness_text(settings);
    return fmt::format("async_ps s={}", bound == kUnbounded ? "inf" : bound);
  }
  return settings.scheme;
}

}  // namespace harness
