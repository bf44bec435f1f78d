#include "harness/check/comparability.h"

#include <algorithm>
#include <regex>
#include <set>

#include <fmt/format.h>

namespace harness {

std::string mpi_release(std::string text) {
  // Records before 0.3.1 kept the NUL that Open MPI counts in the string's length.
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
  text = text.substr(0, text.find(','));
  static const std::regex release(R"(^(\D*?)(\d+)\.(\d+)(\.\d+)?)");
  std::smatch match;
  if (std::regex_search(text, match, release)) return match[1].str() + match[2].str() + "." + match[3].str();
  return text;
}

std::string incomparable(const PointRecord& a, const PointRecord& b) {
  const auto hosts = [](const PointRecord& record) {
    const auto& list = record.measurements->hosts;
    return std::set<std::string>(list.begin(), list.end()).size();
  };
  if (a.schema_version != b.schema_version &&
      std::min(a.schema_version, b.schema_version) < kTimingsComparableSince) {
    return fmt::format("record schema {} against {}", a.schema_version, b.schema_version);
  }
  if (a.settings.kind == Kind::kTrain &&
      (a.schema_version < kStepMeansSince) != (b.schema_version < kStepMeansSince)) {
    return fmt::format("record schema {} against {} (a training step's times became the training ranks' means in "
                       "{})",
                       a.schema_version, b.schema_version, kStepMeansSince);
  }
  if (hosts(a) != hosts(b)) return fmt::format("{} host(s) against {}", hosts(a), hosts(b));
  const std::string library_a = mpi_release(a.measurements->mpi_library);
  const std::string library_b = mpi_release(b.measurements->mpi_library);
  if (library_a != library_b) return fmt::format("MPI library \"{}\" against \"{}\"", library_a, library_b);
  if (a.settings.device != b.settings.device) {
    return fmt::format("device {} against {}", a.settings.device, b.settings.device);
  }
  return "";
}

}  // namespace harness
