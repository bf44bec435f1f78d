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
  // MPICH says "MPICH Version:\t4.0.2": one space for any run of blanks, for messages.
  static const std::regex blanks(R"([ \t]+)");
  text = std::regex_replace(text, blanks, " ");
  static const std::regex release(R"(^(\D*?)(\d+)\.(\d+)(\.\d+)?)");
  std::smatch match;
  if (std::regex_search(text, match, release)) return match[1].str() + match[2].str() + "." + match[3].str();
  return text;
}

int timings_schema(const PointRecord& record) {
  return record.measurements ? std::min(record.schema_version, record.measurements->schema_version)
                             : record.schema_version;
}

std::string incomparable(const PointRecord& a, const PointRecord& b, bool allow_other_mpi) {
  const auto hosts = [](const PointRecord& record) {
    const auto& list = record.measurements->hosts;
    return std::set<std::string>(list.begin(), list.end()).size();
  };
  const int schema_a = timings_schema(a);
  const int schema_b = timings_schema(b);
  if (schema_a != schema_b && std::min(schema_a, schema_b) < kTimingsComparableSince) {
    return fmt::format("record schema {} against {}", schema_a, schema_b);
  }
  if (a.settings.kind == Kind::kTrain && (schema_a < kStepMeansSince) != (schema_b < kStepMeansSince)) {
    return fmt::format("record schema {} against {} (a training step's times became the training ranks' means in "
                       "{})",
                       schema_a, schema_b, kStepMeansSince);
  }
  if (hosts(a) != hosts(b)) return fmt::format("{} host(s) against {}", hosts(a), hosts(b));
  const std::string library_a = mpi_release(a.measurements->mpi_library);
  const std::string library_b = mpi_release(b.measurements->mpi_library);
  if (library_a != library_b && !allow_other_mpi) {
    return fmt::format("MPI library \"{}\" against \"{}\"", library_a, library_b);
  }
  if (a.settings.device != b.settings.device) {
    return fmt::format("device {} against {}", a.settings.device, b.settings.device);
  }
  return "";
}

}  // namespace harness
