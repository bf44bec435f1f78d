#include "schemes/registry.h"

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
  };
  return table;
}

const SchemeInfo& find_scheme(std::string_view name) { return find_by_name(scheme_table(), name, "scheme"); }

int sync_every(const PointSettings& settings) {
  return settings.scheme == "local_sgd" ? static_cast<int>(settings.option<int64_t>("sync_every", kDefaultSyncEvery))
                                        : 1;
}

}  // namespace harness
