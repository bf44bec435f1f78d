#include "harness/launch/job_ledger.h"

#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/results/json_fields.h"

namespace harness {

JobLedger read_ledger(const ResultsDirectory& directory) {
  JobLedger ledger;
  std::error_code missing;
  if (!std::filesystem::exists(directory.ledger_path(), missing)) {
    std::random_device random;
    ledger.sweep_id = fmt::format("{:08x}", random());
    return ledger;
  }
  const std::string path = directory.ledger_path();
  const Json json = read_json_file(path);
  const Fields fields(json, path);
  if (readable_version(fields, kLedgerSchemaVersion) != kLedgerSchemaVersion) {
    fields.fail("schema_version", fmt::format("{}", kLedgerSchemaVersion));
  }
  ledger.sweep_id = fields.text("sweep_id");
  ledger.launcher = fields.at("launcher");
  const Json& entries = fields.at("jobs");
  if (!entries.is_array()) fields.fail("jobs", "a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Fields entry(entries[i], fmt::format("{}: jobs[{}]", path, i));
    ledger.entries.push_back({entry.text("point"), entry.text("key"), entry.text("job"),
                              entry.text("measurements"), entry.list<std::string>("command"),
                              entry.number("submitted_at"), std::nullopt, ""});
    if (entry.has("attempt")) ledger.entries.back().attempt = entry.text("attempt");
    if (entry.has("build")) {
      ledger.entries.back().build = build_provenance_from_json(entry.at("build"), fmt::format("{}: jobs[{}]: build", path, i));
    }
  }
  return ledger;
}

void write_ledger(const ResultsDirectory& directory, const JobLedger& ledger) {
  Json entries = Json::array();
  for (const auto& entry : ledger.entries) {
    entries.push_back({{"point", entry.point_id},
                       {"key", entry.key},
                       {"job", entry.external_id},
                       {"measurements", entry.measurements_path},
                       {"command", entry.command},
                       {"submitted_at", entry.submitted_at}});
    if (entry.build) entries.back()["build"] = to_json(*entry.build);
    if (!entry.attempt.empty()) entries.back()["attempt"] = entry.attempt;
  }
  const Json json = {{"schema_version", kLedgerSchemaVersion},
                     {"sweep_id", ledger.sweep_id},
                     {"launcher", ledger.launcher},
                     {"jobs", entries}};
  std::filesystem::create_directories(directory.jobs_dir());
  write_file_atomically(directory.ledger_path(), json.dump(1));
}

void refuse_jobs_of_another_launcher(const ResultsDirectory& directory, const JobLedger& ledger,
                                     std::string_view launcher) {
  if (ledger.entries.empty() || ledger.launcher.value("name", "") == launcher) return;
  const std::string theirs = ledger.launcher.value("name", "?");
  throw ConfigError(fmt::format(
      "{}: {} point(s) have jobs in flight through the {} launcher ({}); follow them with --launcher {}, see them "
      "with `harness status {}` or stop them with `harness cancel {}`",
      directory.path(), ledger.entries.size(), theirs, directory.ledger_path(), theirs, directory.path(),
      directory.path()));
}

}  // namespace harness
