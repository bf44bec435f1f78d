#include "harness/check/check_report.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

namespace harness {

int CheckReport::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const CheckRow& row) { return row.verdict == verdict; }));
}

int CheckReport::exit_status() const {
  if (count(Verdict::kRegression) > 0) return kCheckRegression;
  if (!strict) return kCheckPass;
  if (count(Verdict::kMissing) + count(Verdict::kFailed) + count(Verdict::kNotComparable) > 0) return kCheckMissing;
  if (count(Verdict::kInconclusive) > 0) return kCheckInconclusive;
  return kCheckPass;
}

void sort_rows(std::vector<CheckRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const CheckRow& a, const CheckRow& b) {
    return std::tie(a.verdict, a.point, a.metric, a.bytes) < std::tie(b.verdict, b.point, b.metric, b.bytes);
  });
}

std::string row_title(const CheckRow& row) {
  std::string title = row.point + " " + row.label;
  if (!row.reference.empty() && row.reference != "baseline") title += " vs " + row.reference;
  title += ": " + row.metric;
  if (!row.size.empty()) title += " @ " + row.size;
  return title;
}

std::string format_change(double change) {
  return std::isfinite(change) ? fmt::format("{:+.1f}%", change * 100) : "n/a";
}

std::string format_value(double value) {
  if (!std::isfinite(value)) return "n/a";
  const double magnitude = std::abs(value);
  if (magnitude >= 100) return fmt::format("{:.1f}", value);
  if (magnitude >= 1) return fmt::format("{:.3f}", value);
  return fmt::format("{:.4g}", value).find('e') == std::string::npos ? fmt::format("{:.4g}", value)
                                                                      : fmt::format("{:.9f}", value);
}

}  // namespace harness
