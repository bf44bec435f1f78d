#include "harness/study/builds.h"

#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/study/settings.h"
#include "harness/study/validate.h"

namespace harness {
namespace {

constexpr std::size_t kMaxBuilds = 16;
constexpr std::size_t kMaxPathBytes = 4096;

std::vector<std::string> build_names(const Experiment& experiment, const std::set<std::string>& named_elsewhere) {
  std::vector<std::string> names;
  for (const auto& build : experiment.builds) names.push_back(build.name);
  for (const auto& name : named_elsewhere) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// "one of the builds base, head" / "no builds (name them in ...)": what a value of `build` may be.
std::string expected_builds(const Experiment& experiment, const std::set<std::string>& named_elsewhere) {
  if (experiment.builds.empty() && named_elsewhere.empty()) {
    return "no build name: the experiment names no builds (add \"builds\": {\"NAME\": \"PATH\"} or run "
           "with --build NAME=PATH)";
  }
  return fmt::format("one of the builds named {}({}), or \"\" for the running harness",
                     named_elsewhere.empty() ? "in the experiment " : "in the experiment or with --build ",
                     fmt::join(build_names(experiment, named_elsewhere), ", "));
}

void check_build_value(const Experiment& experiment, const Json& value, const std::string& where,
                       const std::set<std::string>& named_elsewhere) {
  const std::string name = value.get<std::string>();
  if (name.empty()) return;
  const auto names = build_names(experiment, named_elsewhere);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw ConfigError(fmt::format("{}: unknown build {}; expected {}", where, describe_text(name),
                                  expected_builds(experiment, named_elsewhere)));
  }
}

// The set of strings at `pointer` in a schema (an "enum" list), or nothing when absent.
std::set<std::string> enum_at(const Json& schema, const Json::json_pointer& pointer) {
  std::set<std::string> values;
  if (!schema.contains(pointer) || !schema.at(pointer).is_array()) return values;
  for (const auto& value : schema.at(pointer)) {
    if (value.is_string()) values.insert(value.get<std::string>());
  }
  return values;
}

}  // namespace

std::vector<NamedBuild> read_builds(const Json& block, const std::string& where) {
  if (!block.is_object() || block.empty() || block.size() > kMaxBuilds) {
    throw ConfigError(fmt::format("{}: expected an object of 1 to {} build names and paths, such as "
                                  "{{\"base\": \"build-base/harness\", \"head\": \"build/harness\"}}, got {}",
                                  where, kMaxBuilds, describe_json(block)));
  }
  std::vector<NamedBuild> builds;
  for (const auto& [name, path] : block.items()) {
    const std::string build_where = fmt::format("{}.{}", where, name);
    if (!is_plain_name(name)) {
      throw ConfigError(fmt::format("{}: unknown build name {}; expected letters, digits, '_', '.' and '-', "
                                    "not starting with '.' or '-'",
                                    where, describe_text(name)));
    }
    if (!path.is_string() || path.get_ref<const std::string&>().empty() ||
        path.get_ref<const std::string&>().size() > kMaxPathBytes ||
        path.get_ref<const std::string&>().find('\0') != std::string::npos) {
      throw ConfigError(fmt::format("{}: expected the path of a harness binary (such as build/harness), got {}",
                                    build_where, describe_json(path)));
    }
    builds.push_back({name, path.get<std::string>(), build_where});
  }
  return builds;
}

void use_builds(Experiment& experiment, bool build_set, const std::set<std::string>& named_elsewhere) {
  const std::string& file = experiment.source_path;
  check_build_value(experiment, Json(experiment.base.build), file + ": settings.build", named_elsewhere);
  bool swept = false;
  for (const auto& axis : experiment.sweep) {
    if (axis.key != "build") continue;
    swept = true;
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      check_build_value(experiment, axis.values[i], fmt::format("{}: {}[{}]", file, axis.path, i), named_elsewhere);
    }
  }
  if (experiment.builds.empty() || swept || build_set) return;
  SweepAxis axis;
  axis.key = "build";
  axis.path = "builds";
  for (const auto& build : experiment.builds) axis.values.emplace_back(build.name);
  experiment.sweep.push_back(std::move(axis));
}

BuildFacts parse_build_facts(const std::string& version_output, const std::string& schema_output,
                             const std::string& where) {
  // `harness --version` prints "harness 0.3.0 (31f404a0c2b1)". The output holds stderr too, where
  // a loader or a library may have warned first: the line is looked for, not assumed first.
  static const std::regex version_line(R"(^harness (\S+) \(([^)\s]+)\)\s*$)");
  std::smatch match;
  std::istringstream lines(version_output);
  std::string line;
  bool found = false;
  while (!found && std::getline(lines, line)) found = std::regex_match(line, match, version_line);
  if (!found) {
    const std::string first_line = version_output.substr(0, version_output.find('\n'));
    throw ConfigError(fmt::format("{}: not a harness binary: --version printed {}, expected \"harness VERSION "
                                  "(COMMIT)\"",
                                  where, describe_text(shortened(first_line, 120))));
  }
  BuildFacts facts;
  facts.version = match[1].str();
  facts.commit = match[2].str();
  // "MPI: MPICH Version: 4.0.2 (family mpich, launcher /usr/bin/mpiexec.mpich)" (issue 54 on).
  static const std::regex mpi_line(R"(^MPI: .* \(family (\S+), launcher (.*)\)\s*$)");
  std::istringstream rest(version_output);
  while (std::getline(rest, line)) {
    if (std::smatch mpi; std::regex_match(line, mpi, mpi_line)) {
      facts.mpi_family = mpi[1].str();
      facts.mpi_launcher = mpi[2].str() == "not found at configure time" ? "" : mpi[2].str();
      break;
    }
  }
  // From the first '{' to the last '}', for the same reason.
  Json schema;
  const auto open = schema_output.find('{');
  const auto close = schema_output.rfind('}');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    schema = Json::parse(schema_output.substr(open, close - open + 1), nullptr, false);
  }
  if (schema.is_discarded() || !schema.is_object()) {
    throw ConfigError(fmt::format("{}: harness {} ({}): `schema` printed no JSON Schema, so which settings it "
                                  "takes is unknown",
                                  where, facts.version, facts.commit));
  }
  const Json::json_pointer settings("/$defs/settings/properties");
  if (!schema.contains(settings) || !schema.at(settings).is_object()) {
    throw ConfigError(fmt::format("{}: harness {} ({}): its schema lists no settings ($defs.settings)", where,
                                  facts.version, facts.commit));
  }
  for (const auto& [key, property] : schema.at(settings).items()) {
    facts.settings.insert(key);
    if (property.is_object() && property.contains("default")) facts.defaults[key] = property["default"];
  }
  facts.backends = enum_at(schema, Json::json_pointer("/$defs/settings/properties/backend/enum"));
  facts.workloads = enum_at(schema, Json::json_pointer("/$defs/settings/properties/workload/enum"));
  return facts;
}

const std::set<std::string>& settings_always_sent() {
  static const std::set<std::string> keys = {"kind",      "ranks",    "nodes",    "ranks_per_node", "threads_per_rank",
                                             "device",    "timeout_s", "timeline", "workload",      "backend"};
  return keys;
}

Json worker_settings(const PointSettings& settings, const BuildFacts* facts, const std::set<std::string>& set_keys) {
  Json json = to_json(settings);
  json.erase("build");
  if (facts == nullptr) {
    // The running harness's own rank program: every setting the point reads. Those it leaves unread
    // (another workload's, scheme's or backend's, and the rest settings_not_read lists) change
    // nothing it does; sent, they only lengthened every command, job script and record (a comm
    // point's launch.command by a third).
    for (const std::string& key : settings_not_read(settings)) json.erase(key);
    return json;
  }
  Json sent = Json::object();
  for (auto& [key, value] : json.items()) {
    const bool given = set_keys.count(key) != 0 || settings_always_sent().count(key) != 0;
    if (given && facts->settings.count(key) != 0) sent[key] = std::move(value);
  }
  return sent;
}

Json settings_run_by(const BuildFacts& facts, const Json& sent) {
  Json settings = facts.defaults;
  for (const auto& [key, value] : sent.items()) settings[key] = value;
  return settings;
}

std::string build_order_warning(const Experiment& experiment) {
  if (experiment.sweep.empty() || experiment.repeats < 2 || experiment.repeats % 2 == 0) return "";
  const SweepAxis& last = experiment.sweep.back();
  const auto paired = std::find_if(experiment.sweep.begin(), experiment.sweep.end(), [&last](const SweepAxis& axis) {
    return axis.key == "build" && (&axis == &last || (axis.zip_group >= 0 && axis.zip_group == last.zip_group));
  });
  if (paired == experiment.sweep.end() || paired->values.size() < 2) return "";
  return fmt::format("{}: repeats {} with the builds of each configuration run back to back: every second repeat "
                     "runs them in the other order, so with an odd count {} runs second in {} of {} pairs, and the "
                     "second point of a pair can run slower (docs/ci-gate.md); use an even number of repeats",
                     experiment.source_path, experiment.repeats, paired->values.back().get<std::string>(),
                     (experiment.repeats + 1) / 2, experiment.repeats);
}

void validate_builds(const Experiment& experiment, const std::vector<Point>& points,
                     const std::map<std::string, BuildFacts>& facts) {
  const Json defaults = to_json(PointSettings{});
  for (const Point& point : points) {
    const auto found = facts.find(point.settings.build);
    if (found == facts.end()) continue;
    const BuildFacts& build = found->second;
    const auto about = [&] {
      return fmt::format("build {} (harness {}, {})", point.settings.build, build.version, build.commit);
    };
    const auto list = [](const std::set<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); };
    if (!build.backends.empty() && build.backends.count(point.settings.backend) == 0) {
      throw ConfigError(fmt::format("{}: {} has no backend \"{}\" (it has {})",
                                    setting_field(experiment, point, "backend"), about(), point.settings.backend,
                                    list(build.backends)));
    }
    if (point.settings.kind == Kind::kTrain && !build.workloads.empty() &&
        build.workloads.count(point.settings.workload) == 0) {
      throw ConfigError(fmt::format("{}: {} has no workload \"{}\" (it has {})",
                                    setting_field(experiment, point, "workload"), about(), point.settings.workload,
                                    list(build.workloads)));
    }
    const Json values = worker_settings(point.settings, nullptr, {});
    for (const auto& [key, value] : values.items()) {
      if (build.settings.count(key) != 0 || (defaults.contains(key) && defaults[key] == value)) continue;
      throw ConfigError(fmt::format("{}: {} has no setting {}; its points must leave it at its default ({})",
                                    setting_field(experiment, point, key), about(), key,
                                    defaults.contains(key) ? defaults[key].dump() : "none"));
    }
  }
}

}  // namespace harness
