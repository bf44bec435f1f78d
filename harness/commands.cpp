#include "harness/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "harness/errors.h"
#include "harness/experiment.h"
#include "harness/launcher.h"
#include "harness/plots.h"
#include "harness/results.h"
#include "harness/validate.h"

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
  std::string text = (point.settings.kind == "comm" ? "comm" : point.settings.workload) + " " +
                     point.settings.backend;
  for (const auto& axis : experiment.sweep) {
    if (axis.key == "workload" || axis.key == "backend") continue;
    text += fmt::format(" {}={}", axis.key, values[axis.key].dump());
  }
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
  validate_points(loaded.experiment, loaded.points);
  return loaded;
}

enum class PointStatus { kOk, kFailed, kInterrupted };

// Runs one point and writes its record; an interrupted point leaves no record, so that a later
// run into the same directory sees it as missing.
PointStatus run_point(const Experiment& experiment, const Point& point, Launcher& launcher,
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
  if (!launch.process.ok()) {
    failure = "mpirun " + launch.process.describe();
  } else {
    try {
      measurements = read_json_file(output);
      // Refuse a record the summary could not read; a benchmark that summed wrong has failed.
      if (point.settings.kind == "comm") {
        int64_t wrong = 0;
        for (const auto& size : message_size_metrics(measurements)) wrong += size.wrong;
        if (wrong > 0) failure = fmt::format("#wrong = {}: the backend's sums differ from MPI_Allreduce's", wrong);
      } else {
        point_metrics(measurements);
      }
    } catch (const Error& error) {
      failure = fmt::format("rank 0 left no usable measurements: {}", error.what());
    }
  }
  std::filesystem::remove(output);
  if (launch.process.interrupted) {
    std::cout << " interrupted (not recorded)" << std::endl;
    return PointStatus::kInterrupted;
  }
  const auto log_tail = failure.empty() ? std::vector<std::string>{}
                                        : tail_lines(request.log_path, 20);
  const Json record = make_point_record(experiment.name, point, launch, run_provenance,
                                        measurements, failure, log_tail);
  write_file_atomically(layout.point_record(point.id), record.dump(1));
  if (failure.empty()) {
    std::cout << fmt::format(" ok ({:.1f} s)\n", launch.process.wall_time_s);
  } else {
    std::cout << fmt::format(" FAILED: {}\n", failure);
    // The last line of a log usually says why (the worker's own one-line error).
    for (auto it = log_tail.rbegin(); it != log_tail.rend(); ++it) {
      if (it->find("harness worker") != std::string::npos) {
        std::cout << "    " << *it << "\n";
        break;
      }
    }
    std::cout << "    log: " << request.log_path << "\n";
  }
  std::cout << std::flush;
  return failure.empty() ? PointStatus::kOk : PointStatus::kFailed;
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
  int failed = 0;
  bool interrupted = false;
  for (const auto& point : loaded.points) {
    std::cout << fmt::format("[{}/{}] {} {}", point.index + 1, loaded.points.size(), point.id,
                             describe_point(experiment, point))
              << std::flush;
    try {
      const PointStatus status =
          run_point(experiment, point, *launcher, layout, provenance, harness_executable);
      if (status == PointStatus::kFailed) ++failed;
    } catch (const Error& error) {
      std::cout << " FAILED: " << error.what() << std::endl;
      ++failed;
    }
    if (interrupt_requested()) {
      interrupted = true;
      std::cout << "harness: interrupted; keeping the points completed so far\n";
      break;
    }
  }

  // Summaries and plots come from the stored records of this experiment's points only.
  std::vector<std::string> ids;
  for (const auto& point : loaded.points) ids.push_back(point.id);
  try {
    const std::vector<SummaryRow> rows = load_summary(layout, ids);
    const bool comm = experiment.base.kind == "comm";
    write_file_atomically(layout.summary_csv(), comm ? comm_summary_csv(rows) : summary_csv(rows));
    std::cout << "\n" << (comm ? comm_summary_table(rows) : summary_table(rows))
              << "\nsummary: " << layout.summary_csv() << "\n";
    const auto images = write_plots(layout, experiment.name, experiment.base.kind, rows);
    if (!images.empty()) {
      std::cout << "plots:   " << layout.plots_dir() << "/ (";
      for (std::size_t i = 0; i < images.size(); ++i) {
        std::cout << (i ? ", " : "") << std::filesystem::path(images[i]).filename().string();
      }
      std::cout << ")\n";
    }
  } catch (const Error& error) {
    std::cerr << "harness: " << error.what() << "\n";
    return kExitFailure;
  }
  if (interrupted || interrupt_requested()) return kExitInterrupted;
  if (failed > 0) {
    std::cerr << fmt::format("harness: {} of {} point(s) failed\n", failed, loaded.points.size());
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
  return kExitOk;
}

}  // namespace harness
