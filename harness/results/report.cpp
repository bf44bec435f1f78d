#include "harness/results/report.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "backends/registry.h"  // kNoExchangePath
#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/results/comm_report.h"
#include "harness/results/gpu_limits.h"
#include "harness/results/html_report.h"
#include "harness/results/plots.h"
#include "harness/results/timeline_plot.h"
#include "harness/results/train_report.h"
#include "harness/study/settings.h"

namespace harness {

const KindReport& report_for(Kind kind) {
  static const TrainReport train;
  static const CommReport comm;
  switch (kind) {
    case Kind::kComm:
      return comm;
    case Kind::kTrain:
      break;
  }
  return train;
}

namespace {

// The smallest buffer at which more reduction threads sped staging up where it was measured: on
// an H200, 2 ranks, 4 threads a rank were faster at 16 and 64 MiB and slower at 4 MiB.
constexpr int64_t kStagedThreadsPayFromBytes = int64_t{16} << 20;

// A comm run that staged GPU buffers of 16 MiB or more through host memory to a backend that sums
// them there on one thread a rank (shm_reduce_threads set to 1, or "auto" with one core a rank):
// host-bound staging's main lever. What ran is the record's staging_levers (version 14); before,
// the setting, whose default was 1. Training runs are left out: what the threads do to a step's
// buckets was not measured.
bool staged_sums_on_one_thread(const Run& run) {
  const PointSettings& settings = run.record.settings;
  const auto& measurements = run.record.measurements;
  if (!measurements || !measurements->comm || measurements->comm->sizes.empty()) return false;
  if (gpu_bound(run_exchange_path(run)) != GpuBound::kHostDeviceCopies) return false;
  const auto& sizes = measurements->comm->sizes;
  const auto largest = std::max_element(sizes.begin(), sizes.end(),
                                        [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  if (largest->bytes < kStagedThreadsPayFromBytes) return false;
  // Whether this point's backend reads the setting (shm and hier do), from the settings table.
  const std::vector<std::string> unread = settings_not_read(settings);
  if (std::find(unread.begin(), unread.end(), "shm_reduce_threads") != unread.end()) return false;
  const std::vector<StagingLeverStep>& levers = measurements->staging_levers;
  if (!levers.empty()) {
    const auto step = std::find_if(levers.rbegin(), levers.rend(), [&](const StagingLeverStep& s) {
      return static_cast<int64_t>(s.from_bytes) <= largest->bytes;
    });
    return step != levers.rend() && step->levers.reduce_threads == 1;
  }
  return shm_reduce_threads(backend_options(settings)) == 1;
}

// Below the table: what the runs' records say of ranks outnumbering cores, of the path to the
// backend where it is not plain host memory, and of their GPUs; one line per distinct value.
std::string record_notes(const ResultSet& set) {
  std::vector<std::string> lines;
  const auto add = [&lines](std::string line) {
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(std::move(line));
  };
  // Ranks outnumbering cores: the ids, per layout.
  std::vector<std::pair<std::string, std::vector<std::string>>> oversubscribed;
  for (const Run& run : set.runs()) {
    const std::string layout = run_oversubscribed(run);
    if (layout.empty()) continue;
    auto found = std::find_if(oversubscribed.begin(), oversubscribed.end(), [&](const auto& o) { return o.first == layout; });
    if (found == oversubscribed.end()) found = oversubscribed.insert(oversubscribed.end(), {layout, {}});
    found->second.push_back(run.record.id);
  }
  // What the wait for a core shows as: a training study splits its efficiency; the comm benchmark
  // has only the reductions' times.
  const bool comm = set.kind() == Kind::kComm;
  for (const auto& [layout, ids] : oversubscribed) {
    add(fmt::format("oversubscribed: {} ({}{}): ranks wait for a core, {}", layout, ids.front(),
                    ids.size() > 1 ? fmt::format(" and {} more", ids.size() - 1) : "",
                    comm ? "which lengthens the reductions' times (a rank's turn may wait a scheduler tick)"
                         : "which the efficiency split shows as compute inflation and waiting for the slowest rank, "
                           "not as communication"));
  }
  for (const Run& run : set.runs()) {
    const std::string path = run_exchange_path(run);
    if (path == kNoExchangePath) {
      add("one rank: nothing to exchange, so the backend is never called (no staging, no copies)");
    } else if (!path.empty() && path != "host memory") {
      add(fmt::format("{} on {}: the buffers reach it by {}", run.record.settings.backend,
                      run.record.settings.device, path));
    }
    if (staged_sums_on_one_thread(run)) {
      add(fmt::format("{} on {}: each rank summed its slice of the staged buffers on one thread "
                      "(shm_reduce_threads), which bounds staging of tens of MiB; with 4 threads a rank "
                      "(shm_reduce_threads \"auto\" or 4, and threads_per_rank 4 or more) staged shm at 64 MiB went "
                      "from 5-6 to 10-13 GB/s on an H200, and was slower at 4 MiB (docs/gpus.md#staging-pipelined)",
                      run.record.settings.backend, run.record.settings.device));
    }
    const std::string gpus = run_gpus(run);
    if (!gpus.empty()) add("GPUs: " + gpus);
  }
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text.empty() ? "" : "\n" + text;
}

}  // namespace

std::string console_text(const ResultSet& set) { return report_for(set.kind()).console_table(set) + record_notes(set); }

WrittenReports write_reports(const ResultSet& set, const ResultsDirectory& directory) {
  const KindReport& report = report_for(set.kind());
  WrittenReports written;
  for (const auto& [name, contents] : report.tables(set)) {
    const std::string path = directory.path() + "/" + name;
    write_file_atomically(path, contents);
    written.tables.push_back(path);
  }
  written.console = console_text(set);
  std::filesystem::create_directories(directory.plots_dir());  // plots/ may have been deleted
  std::map<std::string, std::string> plots;
  std::optional<TimelinePlot> timeline;
  if (find_program("gnuplot").empty()) {
    written.plots_not_drawn = "gnuplot not found on PATH";
  } else {
    plots = report.plot_data(set);
    timeline = timeline_plot(set, directory);
  }
  if (written.plots_not_drawn.empty()) {
    // What `harness model` draws stays; any other plot not drawn now is of earlier records. (Without
    // gnuplot they stay, and the page says they are from an earlier drawing.)
    for (const std::string& name : plot_names()) {
      const bool drawn_now = plots.count(name) > 0 || (name == "timeline" && timeline);
      if (!drawn_now && name != "model_fit" && name != "prediction") remove_plot(directory.plots_dir(), name);
    }
    written.images = draw_plots(plots, set, directory.plots_dir(), {}, &written.plots_failed);
    if (timeline) {
      for (auto& image : draw_plots({{"timeline", timeline->data}}, set, directory.plots_dir(),
                                    {{"TIMELINE_POINT", timeline->description}}, &written.plots_failed)) {
        written.images.push_back(std::move(image));
      }
    }
  }
  std::string plots_note = written.plots_not_drawn;
  for (const std::string& failure : written.plots_failed) plots_note += (plots_note.empty() ? "" : "; ") + failure;
  try {
    written.html = write_html_report(set, directory, plots_note);
  } catch (const Error&) {
    written.html_failure = std::current_exception();
  }
  return written;
}

}  // namespace harness
