#include "harness/results/provenance.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "harness/common/clock.h"
#include "harness/common/version.h"

namespace harness {

Provenance current_provenance(const std::vector<std::string>& command_line) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  Provenance provenance;
  provenance.harness_version = kHarnessVersion;
  provenance.git_commit = git_commit();
  provenance.host = host;
  provenance.command_line = command_line;
  std::error_code error;
  provenance.working_directory = std::filesystem::current_path(error).string();
  return provenance;
}

std::string utc_timestamp(double seconds_since_epoch) {
  const auto seconds = static_cast<std::time_t>(seconds_since_epoch);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string utc_timestamp() { return utc_timestamp(wall_clock_s()); }

}  // namespace harness
