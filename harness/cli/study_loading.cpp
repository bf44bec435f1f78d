#include "harness/cli/study_loading.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/check/check_metrics.h"
#include "harness/check/check_options.h"
#include "harness/cli/commands.h"
#include "harness/common/errors.h"
#include "harness/common/resources.h"
#include "harness/common/text.h"
#include "harness/launch/mpi_dialect.h"
#include "harness/study/json_document.h"
#include "harness/study/validate.h"

namespace harness {

int report_error(const Error& error) {
  std::cerr << "harness: " << error.what() << "\n";
  return dynamic_cast<const ConfigError*>(&error) != nullptr ? kExitBadInput : kExitFailure;
}

namespace {

// --sweep and --set name settings; their values are checked as the file's are, but the message
// names the option.
void check_values(const std::string& key, const Json& values, const std::string& where) {
  PointSettings scratch;
  for (std::size_t i = 0; i < values.size(); ++i) apply_setting(scratch, key, values[i], fmt::format("{}[{}]", where, i));
}

// The command line's changes to an experiment's text: one "settings", "sweep" and "builds" edit each.
class ExperimentChanges {
 public:
  explicit ExperimentChanges(const Experiment& experiment)
      : experiment_(experiment), root_(Json::parse(experiment.source_text)) {
    for (const auto& axis : experiment.sweep) {
      // The axis that use_builds added is no list of the file's: the re-parse adds it again, or
      // leaves it out when the command line sets or sweeps `build` itself.
      if (axis.path != "builds") swept_[axis.key] = experiment.source_path + ": " + axis.path;
    }
  }

  // --build NAME=PATH: a build, replacing the file's of that name.
  void add_build(const std::string& argument) {
    const auto equals = argument.find('=');
    const std::string name = argument.substr(0, equals);
    if (equals == std::string::npos || !is_plain_name(name) || equals + 1 == argument.size()) {
      throw ConfigError(fmt::format("--build {}: expected NAME=PATH, NAME of letters, digits, '_', '.' and '-', "
                                    "such as base=build-base/harness",
                                    describe_text(argument)));
    }
    if (std::find(command_line_builds_.begin(), command_line_builds_.end(), name) != command_line_builds_.end()) {
      throw ConfigError(fmt::format("--build {}: given more than once; expected each build name once", name));
    }
    root_["builds"][name] = argument.substr(equals + 1);
    command_line_builds_.push_back(name);
  }

  // --sweep JSON: more axes, in the form of the file's "sweep" (lists, or "zip" groups).
  void add_sweep(const std::string& text) {
    const Json sweep = Json::parse(text, nullptr, false);
    if (sweep.is_discarded() || !sweep.is_object() || sweep.empty()) {
      throw ConfigError(fmt::format("--sweep {}: expected a JSON object of lists, as an experiment's \"sweep\", "
                                    "such as '{{\"build\": [\"base\", \"head\"]}}'",
                                    describe_text(shortened(text, 80))));
    }
    parse_json_document(text, "--sweep");  // refuses a key given twice, which Json::parse lets the last win
    changed_by_sweep_ = true;
    Json& target = root_["sweep"];
    for (const auto& [key, values] : sweep.items()) {
      if (key != "zip") {
        add_axis(key, values, "--sweep " + key);
        target[key] = values;
        continue;
      }
      const Json groups = values.is_array() ? values : Json::array({values});
      if (groups.empty()) throw ConfigError("--sweep zip: expected an object of equally long lists, or a list of them");
      // The groups join the experiment's own, at their place in its sweep.
      Json& zips = target["zip"];
      if (zips.is_object()) zips = Json::array({zips});
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const std::string where = fmt::format("--sweep zip[{}]", g);
        if (!groups[g].is_object() || groups[g].empty()) {
          throw ConfigError(where + ": expected an object of equally long lists");
        }
        std::size_t length = 0;
        for (const auto& [zipped, list] : groups[g].items()) {
          add_axis(zipped, list, where + "." + zipped, true);
          if (length != 0 && list.size() != length) {
            throw ConfigError(fmt::format("{}.{}: expected {} values, as many as the group's first list, got {}",
                                          where, zipped, length, list.size()));
          }
          length = list.size();
        }
        zips.push_back(groups[g]);
      }
    }
  }

  // --set KEY=VALUE: VALUE as JSON, or else a string.
  void set(const std::string& argument) {
    const auto equals = argument.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw ConfigError(fmt::format("--set {}: expected KEY=VALUE, such as inject_comm_delay_us=100",
                                    describe_text(argument)));
    }
    const std::string key = argument.substr(0, equals);
    const std::string text = argument.substr(equals + 1);
    if (!set_keys_.insert(key).second) {
      throw ConfigError(fmt::format("--set {}: given more than once (--timeline sets timeline); expected each "
                                    "setting once",
                                    key));
    }
    if (const auto swept = swept_.find(key); swept != swept_.end()) {
      throw ConfigError(fmt::format("--set {}: {} is swept in {}; --set fixes a setting for every point", key, key,
                                    swept->second));
    }
    Json value;
    try {
      value = Json::parse(text);
    } catch (const Json::exception&) {
      value = text;  // backend=ring (and 1e999, which the setting then refuses as a string)
    }
    PointSettings scratch;
    apply_setting(scratch, key, value, "--set " + key);
    root_["settings"][key] = value;
  }

  // The changed experiment; its builds' paths absolute, so that its results' copy finds them from
  // anywhere (harness status runs from another directory, SLURM nodes start elsewhere).
  Experiment result() {
    if (root_.contains("builds") && root_["builds"].is_object()) {
      for (auto& [name, path] : root_["builds"].items()) {
        if (!path.is_string() || path.get_ref<const std::string&>().empty()) continue;  // the parser says why
        std::error_code error;
        const std::filesystem::path absolute = std::filesystem::absolute(path.get<std::string>(), error);
        if (!error) path = absolute.lexically_normal().string();
      }
    }
    std::string text;
    try {
      text = root_.dump(2) + "\n";
    } catch (const Json::exception&) {
      // nlohmann refuses to write text that is not UTF-8 (a path of arbitrary bytes).
      throw ConfigError("--set, --sweep and --build: expected values in UTF-8 (a path or text with other bytes "
                        "cannot be kept in the results' experiment.json)");
    }
    // A value from the command line is not in the file: the errors say both.
    const bool changed_here = !set_keys_.empty() || changed_by_sweep_ || !command_line_builds_.empty();
    Experiment changed = parse_experiment(
        text, changed_here ? experiment_.source_path + " with --set/--sweep/--build" : experiment_.source_path);
    for (auto& build : changed.builds) {
      if (std::find(command_line_builds_.begin(), command_line_builds_.end(), build.name) != command_line_builds_.end()) {
        build.where = "--build " + build.name;
      }
    }
    return changed;
  }

 private:
  // A key swept on the command line: checked, and no longer fixed in "settings" (the command line
  // wins over the file, as --set does).
  void add_axis(const std::string& key, const Json& values, const std::string& where, bool zipped = false) {
    if (key == "kind") throw ConfigError(where + ": \"kind\" cannot be swept (an experiment either trains or benchmarks)");
    if (const auto swept = swept_.find(key); swept != swept_.end()) {
      throw ConfigError(fmt::format("{}: {} is swept already ({})", where, key, swept->second));
    }
    if (!values.is_array() || values.empty()) {
      throw ConfigError(fmt::format("{}: expected a non-empty list of values, got {}", where, describe_json(values)));
    }
    check_values(key, values, where);
    for (std::size_t i = 0; i < values.size(); ++i) {
      // In a zip group a value may repeat (its tuples must differ, which the parse checks).
      if (!zipped && std::find(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values[i]) !=
                         values.begin() + static_cast<std::ptrdiff_t>(i)) {
        throw ConfigError(fmt::format("{}[{}]: duplicate value {}; each value may appear once", where, i,
                                      describe_json(values[i])));
      }
      if (key == "build" && !values[i].get<std::string>().empty() &&
          !(root_.contains("builds") && root_["builds"].is_object() && root_["builds"].contains(values[i].get<std::string>()))) {
        throw ConfigError(fmt::format("{}[{}]: unknown build {}; expected a build of the experiment's \"builds\" or "
                                      "one named with --build NAME=PATH",
                                      where, i, describe_json(values[i])));
      }
    }
    swept_[key] = where;
    if (root_.contains("settings") && root_["settings"].is_object()) root_["settings"].erase(key);
  }

  const Experiment& experiment_;
  Json root_;
  std::map<std::string, std::string> swept_;  // key -> where it is swept
  std::vector<std::string> command_line_builds_;
  std::set<std::string> set_keys_;  // by --set
  bool changed_by_sweep_ = false;
};

// `check.against` names the reference configuration that `harness check` compares each one with:
// values no point has would be found only after the whole sweep ran.
void check_against_found(const CheckOptions& check, const std::vector<Point>& points) {
  if (check.against.empty()) return;
  const bool found = std::any_of(points.begin(), points.end(),
                                 [&check](const Point& point) { return has_values(point.settings, check.against); });
  if (!found) {
    throw ConfigError(fmt::format("{}: no point has {}; expected values that the settings or the sweep produce",
                                  check.against_where, check.against.dump()));
  }
}

// The "check" block against the experiment it belongs to, as the run will find it only after the
// sweep: a reference key that every point shares leaves nothing to compare with the reference, and
// a threshold on a metric of the other kind (busbw for training) would never apply.
void check_block_fits(const Experiment& experiment, const std::string& where) {
  const Json& block = experiment.check;
  if (block.contains("against")) {
    for (const auto& [key, value] : block["against"].items()) {
      const bool swept = std::any_of(experiment.sweep.begin(), experiment.sweep.end(),
                                     [&key](const SweepAxis& axis) { return axis.key == key; });
      if (!swept) {
        throw ConfigError(
            fmt::format("{}.against.{}: not swept; expected a setting that the sweep varies (every "
                        "point has the same {}, so no other point would be compared with it)",
                        where, key, key));
      }
    }
  }
  if (!block.contains("metrics")) return;
  const Kind kind = experiment.base.kind;
  for (const auto& [name, limits] : block["metrics"].items()) {
    const CheckMetric& metric = find_check_metric(name, where + ".metrics");
    if (metric.kind == kind) continue;
    std::vector<std::string_view> fitting;
    for (const auto& candidate : check_metric_table()) {
      if (candidate.kind == kind) fitting.push_back(candidate.name);
    }
    throw ConfigError(
        fmt::format("{}.metrics.{}: a metric of kind \"{}\" points, and this experiment's are kind "
                    "\"{}\"; expected one of: {}",
                    where, name, kind_name(metric.kind), kind_name(kind), fmt::join(fitting, ", ")));
  }
}

Experiment with_changes(const Experiment& experiment, const StudyChanges& changes) {
  if (changes.settings.empty() && changes.sweeps.empty() && changes.builds.empty() && experiment.builds.empty()) {
    return experiment;
  }
  ExperimentChanges edit(experiment);
  for (const auto& build : changes.builds) edit.add_build(build);
  for (const auto& sweep : changes.sweeps) edit.add_sweep(sweep);
  for (const auto& setting : changes.settings) edit.set(setting);
  return edit.result();
}

// The local launcher's mpirun_args go to every point's launcher: where a sweep's builds are of two
// MPI families, to Open MPI's mpirun and to hydra's mpiexec, which take different options, and one
// of them would stop every point of its build with its usage text.
void refuse_launcher_arguments_across_mpis(const LoadedStudy& study) {
  const LauncherSpec& launcher = study.experiment.launcher;
  if (launcher.name != "local" || !launcher.options.is_object() || !launcher.options.contains("mpirun_args") ||
      launcher.options["mpirun_args"].empty()) {
    return;
  }
  std::set<std::string> families;
  for (const Point& point : study.points) {
    if (point.settings.build.empty()) {
      families.emplace(mpi_family_name(build_mpi_family()));
    } else if (const auto mpi = study.rank_programs.mpi_for(point.settings)) {  // a build that says
      families.insert(mpi->first);
    }
  }
  if (families.size() < 2) return;
  throw ConfigError(fmt::format("{}.mpirun_args: the sweep's builds start with two MPIs' launchers ({}), which take "
                                "different options: expected none (docs/mpi.md)",
                                launcher.where.empty() ? "launcher" : launcher.where, fmt::join(families, ", ")));
}

}  // namespace

LoadedStudy load_study(const std::string& experiment_path, const StudyChanges& changes) {
  LoadedStudy study;
  // A file may sweep builds that only the command line names: their names pass the file's first
  // reading, and add_build checks each NAME=PATH before the reading with them.
  std::set<std::string> command_line_builds;
  for (const auto& build : changes.builds) command_line_builds.insert(build.substr(0, build.find('=')));
  study.experiment = with_changes(load_experiment(experiment_path, command_line_builds), changes);
  const std::string& launcher = changes.launcher;
  if (!launcher.empty() && launcher != study.experiment.launcher.name) {
    LauncherSpec spec;
    spec.name = launcher;
    spec.where = "--launcher";
    study.experiment.launcher = spec;
  }
  // A mistake in the check block is found now, not after the sweep.
  CheckOptions check = default_check_options();
  if (!study.experiment.check.empty()) {
    apply_check_block(check, study.experiment.check, experiment_path + ": check");
    check_block_fits(study.experiment, experiment_path + ": check");
  }
  study.points = expand(study.experiment);
  check_against_found(check, study.points);
  study.scheduler = make_scheduler(study.experiment.launcher);
  validate_points(study.experiment, study.points, study.scheduler->limits());
  study.rank_programs = RankPrograms::probe(study.experiment, self_executable());
  validate_builds(study.experiment, study.points, study.rank_programs.facts());
  refuse_launcher_arguments_across_mpis(study);
  return study;
}

void check_run_target(const LoadedStudy& study, const ResultsDirectory& directory, bool out_given, bool detach) {
  if (detach && !study.scheduler->jobs_outlive_harness()) {
    throw ConfigError(fmt::format("--detach: the {} launcher's jobs end with the harness that started "
                                  "them; detaching needs a cluster launcher (--launcher slurm)",
                                  study.scheduler->name()));
  }
  if (!out_given) return;
  directory.check_creatable();
  directory.check_reusable_for(study.experiment.name);
}

Experiment load_stored_experiment(const ResultsDirectory& directory, const std::string& prefix) {
  if (!std::filesystem::exists(directory.experiment_copy())) {
    throw ConfigError(fmt::format("{}{}: not a results directory (no experiment.json)", prefix, directory.path()));
  }
  directory.require_own_experiment_copy();
  return load_experiment(directory.experiment_copy());
}

std::string default_out_dir(const std::string& experiment_name) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  const std::string stamped = fmt::format("results/{}/{}", experiment_name, stamp);
  // Another run started in the same second (or an hour apart, when the clocks go back) has it:
  // a new run must not resume that one, nor be refused for it.
  std::string path = stamped;
  for (int again = 2; std::filesystem::exists(path) && again < 1000; ++again) path = fmt::format("{}-{}", stamped, again);
  return path;
}

std::string self_executable() {
  const std::filesystem::path path = running_executable();
  if (path.empty()) throw LaunchError("cannot resolve /proc/self/exe to start the rank program");
  return path.string();
}

}  // namespace harness
