#include "harness/launch/rank_programs.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/process.h"
#include "harness/common/text.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

// A harness prints its version and schema in well under a second; a binary that takes this long
// is not one (or hangs).
constexpr double kProbeTimeoutS = 20;

std::string absolute_path(const std::string& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

std::string run_for_probe(const std::string& path, const std::string& argument, const std::string& where) {
  ProcessRequest request;
  request.argv = {path, argument};
  request.timeout_s = kProbeTimeoutS;
  request.stop_on_interrupt = false;
  CapturedRun run;
  try {
    run = run_captured(std::move(request));
  } catch (const LaunchError& error) {
    throw ConfigError(fmt::format("{}: cannot run {}: {}", where, path, error.what()));
  }
  if (!run.outcome.ok()) {
    throw ConfigError(fmt::format("{}: `{} {}` failed ({}): {}; expected a harness binary", where, path, argument,
                                  run.outcome.describe(), describe_text(shortened(run.output, 200))));
  }
  return run.output;
}

// Folds the file's bytes into a 64-bit FNV-1a hash; false when it cannot be read.
bool hash_file(const fs::path& path, uint64_t& hash) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char chunk[65536];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      hash ^= static_cast<unsigned char>(chunk[i]);
      hash *= 1099511628211ULL;
    }
  }
  return true;
}

// 16 hex digits of 64-bit FNV-1a over the build's bytes ("" when the binary cannot be read): the
// harness binary, then the rank programs beside it (harness-worker and harness-comm-worker, which
// `harness worker` execs; older builds lack one or both, which are skipped), so that rebuilding
// any of them is a new build.
std::string file_fingerprint(const std::string& path) {
  uint64_t hash = 14695981039346656037ULL;
  if (!hash_file(path, hash)) return "";
  for (const char* program : {"harness-worker", "harness-comm-worker"}) {
    hash_file(fs::path(path).parent_path() / program, hash);
  }
  return fmt::format("{:016x}", hash);
}

BuildFacts probe_build(const NamedBuild& build, const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::is_regular_file(status) || ::access(path.c_str(), X_OK) != 0) {
    throw ConfigError(fmt::format("{}: {}: {}; expected the path of a harness binary (such as build/harness)",
                                  build.where, describe_text(path),
                                  error || !fs::exists(status) ? "no such file"
                                  : !fs::is_regular_file(status) ? "not a regular file"
                                                                 : "not executable"));
  }
  return parse_build_facts(run_for_probe(path, "--version", build.where), run_for_probe(path, "schema", build.where),
                           build.where);
}

}  // namespace

RankPrograms RankPrograms::probe(const Experiment& experiment, const std::string& self) {
  RankPrograms programs(self);
  programs.set_keys_ = experiment.set_keys;
  for (const NamedBuild& build : experiment.builds) {
    const std::string path = absolute_path(build.path);
    programs.builds_[build.name] = Build{path, probe_build(build, path), file_fingerprint(path)};
  }
  return programs;
}

RankPrograms RankPrograms::unprobed(const Experiment& experiment, const std::string& self) {
  RankPrograms programs(self);
  programs.set_keys_ = experiment.set_keys;
  for (const NamedBuild& build : experiment.builds) programs.builds_[build.name] = Build{absolute_path(build.path), {}, ""};
  return programs;
}

const RankPrograms::Build* RankPrograms::build_of(const PointSettings& settings) const {
  if (settings.build.empty()) return nullptr;
  const auto found = builds_.find(settings.build);
  // The experiment's own checks (study/builds.h) refuse a build it does not name.
  if (found == builds_.end()) throw ConfigError(fmt::format("build {}: not one of the experiment's builds", settings.build));
  return &found->second;
}

const std::string& RankPrograms::path_for(const PointSettings& settings) const {
  const Build* build = build_of(settings);
  return build != nullptr ? build->path : self_;
}

Json RankPrograms::worker_settings_for(const PointSettings& settings) const {
  const Build* build = build_of(settings);
  return worker_settings(settings, build != nullptr && build->facts ? &*build->facts : nullptr, set_keys_);
}

std::optional<BuildProvenance> RankPrograms::provenance_for(const PointSettings& settings) const {
  const Build* build = build_of(settings);
  if (build == nullptr) return std::nullopt;
  BuildProvenance provenance{settings.build, build->path, "", "", build->fingerprint};
  if (build->facts) {
    provenance.version = build->facts->version;
    provenance.commit = build->facts->commit;
    provenance.settings = settings_run_by(*build->facts, worker_settings_for(settings));
  }
  return provenance;
}

std::optional<std::pair<std::string, std::string>> RankPrograms::mpi_for(const PointSettings& settings) const {
  const Build* build = build_of(settings);
  if (build == nullptr || !build->facts || build->facts->mpi_family.empty()) return std::nullopt;
  return std::pair(build->facts->mpi_family, build->facts->mpi_launcher);
}

std::map<std::string, BuildFacts> RankPrograms::facts() const {
  std::map<std::string, BuildFacts> facts;
  for (const auto& [name, build] : builds_) {
    if (build.facts) facts[name] = *build.facts;
  }
  return facts;
}

}  // namespace harness
