#include "harness/check/wrong_sums.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "harness/check/check_metrics.h"

namespace harness {

WrongSums wrong_sums_of(const Configuration& configuration) {
  WrongSums sums;
  int64_t smallest = std::numeric_limits<int64_t>::max();
  for (const auto& [repeat, record] : configuration.ok) {
    ++sums.total;
    if (!record->measurements || !record->measurements->comm) continue;
    bool wrong = false;
    for (const MessageSizeMetrics& size : record->measurements->comm->sizes) {
      if (size.wrong <= 0) continue;
      wrong = true;
      sums.elements += size.wrong;
      smallest = std::min(smallest, size.bytes);
    }
    if (wrong) ++sums.repeats;
  }
  if (sums.repeats > 0) sums.first_bytes = smallest;
  return sums;
}

std::string wrong_sums_text(const WrongSums& sums) {
  if (sums.repeats == 0) return "";
  return fmt::format("#wrong {} from {} in {} of {} repeat(s)", sums.elements, size_label(sums.first_bytes),
                     sums.repeats, sums.total);
}

}  // namespace harness
