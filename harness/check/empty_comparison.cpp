#include "harness/check/empty_comparison.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/check/check_metrics.h"

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
