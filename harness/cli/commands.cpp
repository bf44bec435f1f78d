#include "harness/cli/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/study/experiment.h"
#include "harness/launch/launcher.h"
#include "harness/results/plots.h"
#include "harness/launch/progress.h"
#include "harness/results/results.h"
#include "harness/study/validate.h"

namespace harness {
namespace {

std::string self_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw LaunchError("cannot resolve /proc/self/exe to start the worker");
  return path.string();
}

std::string default_out_dir(const std::string& experiment_name) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  ::localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return fmt::format("results/{}/{}", experiment_name, stamp);
}

// "iris_mlp allreduce ranks=2 batch_size=4" for progress lines: the settings that vary.
std::string describe_point(const Experiment& experiment, const Point& point) {
  const Json values = to_json(point.settings);
  std::string text = (point.settings.kind == Kind::kComm ? "comm" : point.settings.workload) + " " +
                     point.settings.backend;
  for (const auto& axis : experiment.sweep) {
    if (axis.key == "workload" || axis.key == "backend") continue;
    text += fmt::format(" {}={}", axis.key, values[axis.key].dump());
  }
  if (experiment.repeats > 1) text += fmt::format(" repeat={}/{}", point.repeat + 1, experiment.repeats);
  return text;
}

struct Loaded {
  Experiment experiment;
  std::vector<Point> points;
};

Loaded load_and_validate(const std::string& path) {
  Loaded loaded;
  loaded.experiment = load_experiment(path);
  loaded.points = expand(loaded.experiment);
  const auto launcher = make_launcher(loaded.experiment.launcher);
  validate_points(loaded.experiment, loaded.points,
                  ResourceLimits{launcher->max_ranks(), launcher->max_ranks_reason()});
  return loaded;
}

// summary.csv, stats.csv (training), the console table and the plots, from the stored records
// of this experiment's points only (a directory may hold records of other experiments).
void write_summary_and_plots(const Experiment& experiment, const std::vector<Point>& points,
                             const ResultsLayout& layout) {
  std::vector<std::string> ids;
  for (const auto& point : points) ids.push_back(point.id);
  const std::vector<SummaryRow> rows = load_summary(layout, ids, experiment.baseline);
  const bool comm = experiment.base.kind == Kind::kComm;
  write_file_atomically(layout.summary_csv(), comm ? comm_summary_csv(rows) : summary_csv(rows));
  if (comm) {
    std::cout << "\n" << comm_summary_table(rows) << "\nsummary: " << layout.summary_csv() << "\n";
  } else {
    const auto stats = summary_stats(rows, experiment.baseline);
    write_file_atomically(layout.stats_csv(), stats_csv(rows, stats));
    // With repeats, one line per configuration (medians and intervals) reads better than one
    // per run; summary.csv keeps every run.
    std::cout << "\n" << (experiment.repeats > 1 ? stats_table(rows, stats) : summary_table(rows))
              << "\nsummary: " << layout.summary_csv() << ", " << layout.stats_csv() << "\n";
  }
  const auto images = write_plots(layout, experiment, rows);
  if (!images.empty()) {
    std::cout << "plots:   " << layout.plots_dir() << "/ (";
    for (std::size_t i = 0; i < images.size(); ++i) {
      std::cout << (i ? ", " : "") << std::filesystem::path(images[i]).filename().string();
    }
    std::cout << ")\n";
  }
}

enum class PointStatus { kOk, kFailed, kInterrupted };

struct PointResult {
  PointStatus status = PointStatus::kFailed;
  std::string outcome;               // appended to the point's progress line
  std::vector<std::string> details;  // further lines (why a point failed, where its log is)
  double wall_time_s = 0;
};

// Runs one point and writes its record; an interrupted point leaves no record, so that a later
// run into the same directory sees it as missing. Writes nothing to the console.
PointResult run_point(const Experiment& experiment, const Point& point, Launcher& launcher,
                      const ResultsLayout& layout, const Json& provenance,
                      const std::string& harness_executable) {
  const std::string output = layout.worker_output(point.id);
  std::filesystem::remove(output);
  LaunchRequest request;
  request.settings = point.settings;
  request.worker_argv = {harness_executable, "worker", "--settings",
                         to_json(point.settings).dump(), "--output", output};
  request.log_path = layout.point_log(point.id);
  // A record left by an earlier run must not pass for this one's if this one is interrupted.
  std::filesystem::remove(layout.point_record(point.id));
  std::filesystem::remove(request.log_path);

  Json run_provenance = provenance;
  run_provenance["started_at"] = utc_timestamp();
  const LaunchOutcome launch = launcher.launch(request);
  run_provenance["finished_at"] = utc_timestamp();

  std::string failure;
  Json measurements;
  bool loss_diverged = false;
  if (!launch.process.ok()) {
    failure = "mpirun " + launch.process.describe();
  } else {
    try {
      measurements = read_json_file(output);
      // Refuse a record the summary could not read; a benchmark that summed wrong has failed.
      if (point.settings.kind == Kind::kComm) {
        int64_t wrong = 0;
        for (const auto& size : message_size_metrics(measurements)) wrong += size.wrong;
        if (wrong > 0) failure = fmt::format("#wrong = {}: the backend's sums differ from MPI_Allreduce's", wrong);
      } else {
        loss_diverged = std::isnan(point_metrics(measurements).final_loss);
      }
    } catch (const Error& error) {
      failure = fmt::format("rank 0 left no usable measurements: {}", error.what());
    }
  }
  std::filesystem::remove(output);
  PointResult result;
  result.wall_time_s = launch.process.wall_time_s;
  if (launch.process.interrupted) {
    result.status = PointStatus::kInterrupted;
    result.outcome = " interrupted (not recorded)";
    return result;
  }
  const auto log_tail = failure.empty() ? std::vector<std::string>{}
                                        : tail_lines(request.log_path, 20);
  const Json record = make_point_record(experiment.name, point, launch, run_provenance,
                                        measurements, failure, log_tail);
  write_file_atomically(layout.point_record(point.id), record.dump(1));
  if (failure.empty()) {
    result.status = PointStatus::kOk;
    // Kept as a result (its timings are real) but said, so a diverged study is not mistaken for a
    // good one.
    result.outcome = fmt::format(
        " ok ({}{})", format_duration(launch.process.wall_time_s),
        loss_diverged ? "; the loss is not a finite number: training diverged, try a lower lr" : "");
    return result;
  }
  result.outcome = " FAILED: " + failure;
  // The last line of a log usually says why (the worker's own one-line error).
  for (auto it = log_tail.rbegin(); it != log_tail.rend(); ++it) {
    if (it->find("harness worker") != std::string::npos) {
      result.details.push_back("    " + *it);
      break;
    }
  }
  result.details.push_back("    log: " + request.log_path);
  return result;
}

// `harness run` continues a results directory of the same experiment (keeping its completed
// points); any other non-empty directory is refused, so that another study's summary and plots
// are not overwritten and no results land among unrelated files.
void refuse_foreign_results_directory(const ResultsLayout& layout, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(layout.directory(), error) || fs::is_empty(layout.directory(), error)) {
    return;
  }
  if (!fs::exists(layout.experiment_copy())) {
    throw ConfigError(fmt::format("--out {}: not empty and not a results directory (no "
                                  "experiment.json); choose a new or empty directory",
                                  layout.directory()));
  }
  std::string stored_name;
  try {
    stored_name = read_json_file(layout.experiment_copy()).at("name").get<std::string>();
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("--out {}: its experiment.json is not an experiment file; "
                                  "choose a new or empty directory",
                                  layout.directory()));
  }
  if (stored_name != name) {
    throw ConfigError(fmt::format("--out {}: holds the results of experiment \"{}\", not \"{}\"; "
                                  "choose a new or empty directory",
                                  layout.directory(), stored_name, name));
  }
}

}  // namespace

int run_command(const RunOptions& options) {
  Loaded loaded;
  ResultsLayout layout("");
  std::unique_ptr<Launcher> launcher;
  std::string harness_executable;
  try {
    loaded = load_and_validate(options.experiment_path);
    launcher = make_launcher(loaded.experiment.launcher);
    layout = ResultsLayout(options.out_dir.empty() ? default_out_dir(loaded.experiment.name)
                                                   : options.out_dir);
    launcher->check_available();
    harness_executable = self_executable();
    refuse_foreign_results_directory(layout, loaded.experiment.name);
    layout.create();
    write_file_atomically(layout.experiment_copy(), loaded.experiment.source_text);
  } catch (const ConfigError& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const Error& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitFailure;
  }
  const Experiment& experiment = loaded.experiment;
  const Json provenance = collect_provenance(options.command_line);

  std::cout << fmt::format("harness: experiment \"{}\", {} point(s), results in {}\n",
                           experiment.name, loaded.points.size(), layout.directory());
  install_interrupt_handlers();
  // Completed points found in the directory first, so the estimate counts only what will run.
  std::vector<bool> kept(loaded.points.size(), false);
  int kept_count = 0;
  for (std::size_t i = 0; i < loaded.points.size(); ++i) {
    kept[i] = !options.fresh && adopt_completed_record(layout, loaded.points[i]);
    kept_count += kept[i] ? 1 : 0;
  }
  Progress progress(static_cast<int>(loaded.points.size()) - kept_count,
                    isatty(STDOUT_FILENO) != 0);
  int failed = 0;
  bool interrupted = false;
  for (const auto& point : loaded.points) {
    progress.start_point(fmt::format("[{}/{}] {} {}", point.index + 1, loaded.points.size(),
                                     point.id, describe_point(experiment, point)));
    if (kept[point.index]) {
      progress.skip_point(" kept (completed in an earlier run)");
      continue;
    }
    PointResult result;
    try {
      result = run_point(experiment, point, *launcher, layout, provenance, harness_executable);
    } catch (const Error& error) {
      result.outcome = std::string(" FAILED: ") + error.what();
    }
    progress.finish_point(result.outcome, result.wall_time_s);
    for (const auto& line : result.details) std::cout << line << "\n";
    std::cout << std::flush;
    if (result.status == PointStatus::kFailed) ++failed;
    if (interrupt_requested()) {
      interrupted = true;
      std::cout << "harness: interrupted; keeping the points completed so far\n";
      break;
    }
  }

  try {
    write_summary_and_plots(experiment, loaded.points, layout);
  } catch (const Error& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitFailure;
  }
  if (kept_count > 0) {
    std::cout << fmt::format("{} point(s) kept from an earlier run (--fresh runs them again)\n",
                             kept_count);
  }
  if (interrupted || interrupt_requested()) return kExitInterrupted;
  if (failed > 0) {
    std::cerr << fmt::format("harness: {} of {} point(s) failed\n", failed, loaded.points.size());
    return kExitFailure;
  }
  return kExitOk;
}

namespace {

// "estimated time: ..." from the wall times of earlier completed records of the same points
// (same settings hash) anywhere under results/<experiment name>/, the default results location.
std::string estimate_from_earlier_runs(const Loaded& loaded) {
  const std::filesystem::path root = std::filesystem::path("results") / loaded.experiment.name;
  std::map<std::string, double> wall_time_by_hash;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(root, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->path().extension() != ".json" || it->path().parent_path().filename() != "points") continue;
    try {
      const Json record = read_json_file(it->path().string());
      if (record.at("status") != "ok") continue;
      const PointSettings settings = settings_from_json(record.at("settings"), it->path().string());
      const std::string hash = point_hash(settings, record.value("repeat", 0));
      wall_time_by_hash[hash] = record.at("launch").at("wall_time_s").get<double>();
    } catch (const std::exception&) {
      continue;  // an unreadable record estimates nothing
    }
  }
  double known_s = 0;
  int known = 0;
  for (const auto& point : loaded.points) {
    const auto found = wall_time_by_hash.find(point_hash(point.settings, point.repeat));
    if (found == wall_time_by_hash.end()) continue;
    known_s += found->second;
    ++known;
  }
  if (known == 0) {
    return fmt::format("estimated time: unknown (no earlier results of these points under {}/)",
                       root.string());
  }
  const int total = static_cast<int>(loaded.points.size());
  const double estimate = known_s / known * total;
  return fmt::format("estimated time: {} ({} of {} point(s) measured before under {}/{})",
                     format_duration(estimate), known, total, root.string(),
                     known < total ? "; the others at their mean" : "");
}

}  // namespace

int plot_command(const std::string& results_dir) {
  const ResultsLayout layout(results_dir);
  Loaded loaded;
  try {
    if (!std::filesystem::exists(layout.experiment_copy())) {
      throw ConfigError(fmt::format("{}: not a results directory (no experiment.json)", results_dir));
    }
    loaded.experiment = load_experiment(layout.experiment_copy());
    loaded.points = expand(loaded.experiment);
    layout.create();  // plots/ may have been deleted
  } catch (const ConfigError& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitBadInput;
  }
  try {
    // Records are found by their settings and repeat, not by id: the ids hash the harness
    // version, and a newer harness must still plot older results.
    const auto stored = stored_record_ids(layout);
    int found = 0;
    for (auto& point : loaded.points) {
      const auto record = stored.find(to_json(point.settings).dump() + "|" + std::to_string(point.repeat));
      if (record == stored.end()) continue;
      point.id = record->second;
      ++found;
    }
    if (found == 0) {
      throw Error(fmt::format("{}: no records of this experiment's points in {}", results_dir,
                              layout.points_dir()));
    }
    write_summary_and_plots(loaded.experiment, loaded.points, layout);
  } catch (const Error& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

int plan_command(const std::string& experiment_path) {
  Loaded loaded;
  try {
    loaded = load_and_validate(experiment_path);
  } catch (const ConfigError& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitBadInput;
  }
  const Experiment& experiment = loaded.experiment;
  std::cout << fmt::format("experiment \"{}\" ({}): {} point(s), launcher {}\n", experiment.name,
                           experiment.source_path, loaded.points.size(), experiment.launcher);
  if (!experiment.description.empty()) std::cout << experiment.description << "\n";
  const Json base = to_json(experiment.base);
  std::cout << "fixed:";
  for (const auto& [key, value] : base.items()) {
    const bool swept = std::any_of(experiment.sweep.begin(), experiment.sweep.end(),
                                   [&key](const SweepAxis& axis) { return axis.key == key; });
    if (!swept) std::cout << " " << key << "=" << value.dump();
  }
  std::cout << "\n";
  int64_t rank_slots = 0;
  for (const auto& point : loaded.points) {
    std::cout << fmt::format("  {} {}\n", point.id, describe_point(experiment, point));
    rank_slots += point.settings.ranks;
  }
  std::cout << fmt::format("total: {} point(s), {} rank-slot(s)\n", loaded.points.size(),
                           rank_slots);
  std::cout << estimate_from_earlier_runs(loaded) << "\n";
  return kExitOk;
}

}  // namespace harness
