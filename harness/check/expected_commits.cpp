#include "harness/check/expected_commits.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"

namespace harness {

ExpectedCommit read_expected_commit(const std::string& argument) {
  static const std::regex form(R"(^([A-Za-z0-9_][A-Za-z0-9_.-]*)=([0-9a-f]{7,40})$)");
  std::smatch match;
  if (!std::regex_match(argument, match, form)) {
    throw ConfigError(fmt::format("--expect-commit {}: expected BUILD=COMMIT, a build name and 7 to 40 lower-case "
                                  "hex digits, such as base=e72dc4e",
                                  describe_text(shortened(argument, 80))));
  }
  return {match[1].str(), match[2].str()};
}

bool names_commit(const std::string& recorded, const std::string& expected) {
  if (recorded.empty() || recorded.find('-') != std::string::npos) return false;  // "unknown", "...-dirty"
  const std::size_t common = std::min(recorded.size(), expected.size());
  return recorded.compare(0, common, expected, 0, common) == 0;
}

void check_expected_commit(const ResultsSide& side, const ExpectedCommit& expected) {
  const std::string where = fmt::format("--expect-commit {}={}", expected.build, expected.commit);
  int records = 0;
  int others = 0;
  std::string first_other;
  for (const PointRecord& record : side.records) {
    if (record.settings.build != expected.build) continue;
    ++records;
    const std::string commit = record.build ? record.build->commit : "";
    if (names_commit(commit, expected.commit)) continue;
    if (others++ == 0) {
      first_other = fmt::format("{} ({}.json)", commit.empty() ? "no recorded commit" : commit, record.id);
    }
  }
  if (records == 0) {
    throw ConfigError(fmt::format("{}: {} has no record of build {}", where, side.dir, expected.build));
  }
  if (others > 0) {
    throw ConfigError(fmt::format("{}: {} of {} record(s) of build {} in {} ran another build: {}, expected commit {}",
                                  where, others, records, expected.build, side.dir, first_other, expected.commit));
  }
}

}  // namespace harness
