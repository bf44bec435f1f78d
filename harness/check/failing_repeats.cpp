#include "harness/check/failing_repeats.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace harness {
namespace {

// Fisher's test at the confidence of the check's intervals (95%).
constexpr double kSignificance = 0.05;

double log_choose(int n, int k) { return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0); }

}  // namespace

double more_failures_p_value(FailureCounts now, FailureCounts before) {
  if (now.failed <= 0) return 1;
  // Hypergeometric: `failures` failed repeats among `population`, `now.total` of them drawn.
  const int population = now.total + before.total;
  const int failures = now.failed + before.failed;
  const double log_all = log_choose(population, now.total);
  double p = 0;
  for (int k = now.failed; k <= std::min(failures, now.total); ++k) {
    if (now.total - k > population - failures) continue;
    p += std::exp(log_choose(failures, k) + log_choose(population - failures, now.total - k) - log_all);
  }
  return std::min(p, 1.0);
}

std::string failing_more(FailureCounts now, FailureCounts before, const std::string& other) {
  // Without a repeat on the other side there is nothing to hold the failures against.
  if (now.failed <= 0 || before.total <= 0) return "";
  if (before.failed == 0) return fmt::format("where {} does not", other);
  const int before_ok = before.total - before.failed;
  if (now.failed == now.total && before_ok > 0) {
    return fmt::format("in every repeat where {}'s {} of {} were ok", other, before_ok, before.total);
  }
  const double p = more_failures_p_value(now, before);
  if (p < kSignificance) {
    return fmt::format("more often than {} ({} of {} failed there; one-sided Fisher exact p = {:.3f})", other,
                       before.failed, before.total, p);
  }
  return "";
}

FailureCounts failures_of(const Configuration& configuration) {
  const int failed = static_cast<int>(configuration.not_ok.size());
  return {failed, failed + static_cast<int>(configuration.ok.size())};
}

bool has_records(const Configuration& configuration) {
  return !configuration.ok.empty() || !configuration.not_ok.empty();
}

namespace {

std::string status_and_reason(const PointRecord& record) {
  return fmt::format("{} ({})", status_name(record.status), record.reason.empty() ? "no reason recorded" : record.reason);
}

}  // namespace

std::string first_reason(const Configuration& configuration) {
  return status_and_reason(*configuration.not_ok.begin()->second);
}

std::string interrupted_text(const Configuration& configuration) {
  if (configuration.interrupted.empty()) return "";
  return fmt::format("; {} repeat(s) ended by the scheduler, which count as missing: {}",
                     configuration.interrupted.size(), status_and_reason(*configuration.interrupted.begin()->second));
}

}  // namespace harness
