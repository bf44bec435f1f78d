#include "harness/check/empty_comparison.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/check/check_metrics.h"
#include "harness/common/json.h"

namespace harness {
namespace {

// "comm", "training", "comm and training": the kinds of point `side` holds.
std::string kinds_of(const ResultsSide& side) {
  std::set<Kind> kinds;
  for (const Configuration& configuration : side.configurations) kinds.insert(configuration.settings.kind);
  std::vector<std::string> names;
  for (const Kind kind : kinds) names.emplace_back(kind == Kind::kComm ? "comm" : "training");
  return fmt::format("{}", fmt::join(names, " and "));
}

// "timeout_s (300 here, 600 in BASE)": the settings in which the closest pair of a current and a
// baseline configuration differ (the fewest keys), up to three; "" when some pair is equal or a
// side has no configuration.
std::string closest_difference(const ResultsSide& current, const ResultsSide& baseline) {
  std::vector<std::string> closest;
  bool found = false;
  for (const Configuration& mine : current.configurations) {
    const Json now = Json::parse(mine.match_identity);
    for (const Configuration& theirs : baseline.configurations) {
      const Json then = Json::parse(theirs.match_identity);
      std::vector<std::string> differing;
      for (const auto& [key, value] : now.items()) {
        const auto other = then.find(key);
        if (other == then.end() || *other != value) {
          differing.push_back(fmt::format("{} ({} here, {} in {})", key, value.dump(),
                                          other == then.end() ? "none" : other->dump(), baseline.dir));
        }
      }
      if (!found || differing.size() < closest.size()) closest = std::move(differing);
      found = true;
    }
  }
  if (closest.size() > 3) closest.resize(3);
  return fmt::format("{}", fmt::join(closest, ", "));
}

}  // namespace

std::string nothing_compared(const std::vector<CheckRow>& rows, const ResultsSide& current,
                             const ResultsSide* baseline, const CheckOptions& options) {
  int missing = 0;
  int failed = 0;
  int not_comparable = 0;
  const CheckRow* first_not_comparable = nullptr;
  for (const CheckRow& row : rows) {
    if (row.verdict == Verdict::kMissing) {
      ++missing;
    } else if (row.verdict == Verdict::kFailed) {
      ++failed;
    } else if (row.verdict == Verdict::kNotComparable) {
      if (not_comparable++ == 0) first_not_comparable = &row;
    } else {
      return "";
    }
  }
  if (baseline != nullptr) {
    const std::string now = kinds_of(current);
    const std::string then = kinds_of(*baseline);
    if (now != then && !now.empty() && !then.empty() && now.find(" and ") == std::string::npos &&
        then.find(" and ") == std::string::npos) {
      return fmt::format("{} holds {} points and {} {} points", current.dir, now, baseline->dir, then);
    }
  }
  const bool applies = std::any_of(current.configurations.begin(), current.configurations.end(), [&](const Configuration& c) {
    const auto& table = check_metric_table();
    return std::any_of(table.begin(), table.end(), [&](const CheckMetric& metric) {
      return metric.kind == c.settings.kind && options.selected(metric.name);
    });
  });
  if (!applies) {
    return fmt::format("no metric{} applies to the points of {}",
                       options.metrics.empty() ? "" : " of --metrics " + fmt::format("{}", fmt::join(options.metrics, ",")),
                       current.dir);
  }
  if (rows.empty()) return fmt::format("every metric is 0 on both sides in {} (one rank communicates nothing)", current.dir);
  if (first_not_comparable != nullptr) {
    // The row's note says what differs and what to do (--allow-other-machine).
    const std::string first = fmt::format("{}: {}", first_not_comparable->point, first_not_comparable->note);
    if (missing == 0 && failed == 0) {
      return fmt::format("no configuration is comparable with its counterpart ({} row(s)); {}", not_comparable, first);
    }
    return fmt::format("every configuration is missing ({}), failing on both sides ({}) or not comparable ({}; {})",
                       missing, failed, not_comparable, first);
  }
  if (failed == 0) {
    // Missing everywhere against another run: most often no configuration has a counterpart.
    if (const std::string differing = baseline == nullptr ? "" : closest_difference(current, *baseline);
        !differing.empty()) {
      return fmt::format("no configuration of {} has a counterpart in {} ({} missing row(s)); the closest differ in {}",
                         current.dir, baseline->dir, missing, differing);
    }
    return fmt::format("every configuration lacks the records of a side ({} missing row(s))", missing);
  }
  if (missing == 0) {
    return fmt::format("every configuration failed on both sides ({} failing row(s)); none has a measurement to compare",
                       failed);
  }
  return fmt::format("every configuration is missing or failing ({} missing, {} failing on both sides)", missing,
                     failed);
}

}  // namespace harness
