#include "harness/results/plots.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/results/plot_templates.h"
#include "harness/results/provenance.h"

namespace harness {
namespace {

std::string gnuplot_string(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return "\"" + escaped + "\"";
}

// Binary-prefixed byte counts for axis labels: 4 B, 64 KiB, 16 MiB.
std::string byte_label(int64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:g} {}", value, kUnits[unit]);
}

// gnuplot tics at the measured message sizes (every other one when there are many), labelled
// with binary prefixes: gnuplot's own %c prefixes are decimal and put "33kB" under 32 KiB.
std::string size_tics(const std::set<int64_t>& sizes) {
  std::vector<std::string> tics;
  const std::size_t stride = sizes.size() > 9 ? 2 : 1;
  std::size_t position = 0;
  for (const int64_t bytes : sizes) {
    if (position++ % stride == 0) tics.push_back(fmt::format("'{}' {}", byte_label(bytes), bytes));
  }
  return fmt::format("{}", fmt::join(tics, ", "));
}

// A folder made with mkdtemp (nothing in it can have been planted) and removed with what is
// left in it when the drawing is done.
class ScratchFolder {
 public:
  explicit ScratchFolder(std::string pattern) : path_(std::move(pattern)) {
    if (::mkdtemp(path_.data()) == nullptr) {
      throw Error(fmt::format("{}: cannot create a folder to draw in: {}",
                              std::filesystem::path(path_).parent_path().string(), std::strerror(errno)));
    }
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::string& path() const { return path_; }
  std::string name() const { return std::filesystem::path(path_).filename().string(); }

 private:
  std::string path_;
};

// One plot: its .dat and .gp, then gnuplot, then the images renamed into place. Throws Error.
std::vector<std::string> draw_plot(const std::string& name, const std::string& contents, const std::string& header,
                                   const std::string& plots_dir) {
  const std::string base = plots_dir + "/" + name;
  write_file_atomically(base + ".dat", contents);
  const std::string script = header + plot_template(name) + plot_template("render");
  write_file_atomically(base + ".gp", script);

  // gnuplot writes into a folder only this process can have made (mkdtemp), and each image is
  // renamed into place: an image name planted as a link is refused, never written through.
  const ScratchFolder drawing(plots_dir + "/.drawing-XXXXXX");
  ProcessRequest gnuplot;
  gnuplot.argv = {"gnuplot", "-e", fmt::format("OUTDIR = \"{}/\"", drawing.name()), name + ".gp"};
  gnuplot.working_directory = plots_dir;
  gnuplot.log_path = plots_dir + "/gnuplot.log";
  // The log keeps every drawing's output: each under a line naming its plot and time. Not through
  // a link (gnuplot's own opening of it refuses one, and says so).
  if (const int log = ::open(gnuplot.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
      log >= 0) {
    const std::string header = fmt::format("== {}.gp, {} ==\n", name, utc_timestamp());
    [[maybe_unused]] const ssize_t written = ::write(log, header.data(), header.size());
    ::close(log);
  }
  gnuplot.timeout_s = 60;
  gnuplot.stop_on_interrupt = false;  // after Ctrl-C the plots of the completed points are still drawn
  const ProcessOutcome outcome = run_process(gnuplot);
  if (!outcome.ok()) {
    throw Error(fmt::format("gnuplot {}.gp failed ({}); see {}", name, outcome.describe(), gnuplot.log_path));
  }
  std::vector<std::string> images;
  for (const char* extension : {".png", ".svg"}) {
    const std::string drawn = drawing.path() + "/" + name + extension;
    const std::string image = base + extension;
    std::error_code error;
    if (std::filesystem::file_size(drawn, error) == 0 || error) {
      throw Error(fmt::format("gnuplot {}.gp wrote no {}; see {}", name, image, gnuplot.log_path));
    }
    if (!whole_image(drawn)) {
      throw Error(fmt::format("gnuplot {}.gp wrote {} only in part (a full disk?); see {}", name, image,
                              gnuplot.log_path));
    }
    replace_file(drawn, image);
    images.push_back(image);
  }
  return images;
}

}  // namespace

bool whole_image(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  constexpr std::streamoff kTail = 64;
  if (!in || size <= 0) return false;
  in.seekg(std::max<std::streamoff>(0, size - kTail));
  std::string tail(static_cast<std::size_t>(std::min(size, kTail)), '\0');
  if (!in.read(tail.data(), static_cast<std::streamsize>(tail.size()))) return false;
  if (path.ends_with(".png")) return tail.size() >= 12 && tail.compare(tail.size() - 8, 4, "IEND") == 0;
  const std::size_t end = tail.find_last_not_of(" \n\r\t");
  return end != std::string::npos && end + 1 >= 6 && tail.compare(end + 1 - 6, 6, "</svg>") == 0;
}

void remove_stale_drawings(const std::string& plots_dir, std::chrono::seconds older_than) {
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code error;
  std::vector<std::filesystem::path> stale;
  for (std::filesystem::directory_iterator it(plots_dir, error), end; !error && it != end; it.increment(error)) {
    std::error_code ignored;
    if (it->path().filename().string().starts_with(".drawing-") && it->is_directory(ignored) &&
        !it->is_symlink(ignored) && now - it->last_write_time(ignored) > older_than) {
      stale.push_back(it->path());
    }
  }
  for (const auto& folder : stale) {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  }
}

const std::string& plot_template(const std::string& name) {
  for (const auto& [template_name, text] : kPlotTemplates) {
    if (template_name == name) return text;
  }
  throw Error(fmt::format("no plot template named \"{}\"", name));
}

std::vector<std::string> plot_names() {
  std::vector<std::string> names;
  for (const auto& [template_name, text] : kPlotTemplates) {
    if (std::string_view(template_name) != "render") names.emplace_back(template_name);
  }
  return names;
}

std::vector<std::string> draw_plots(const std::map<std::string, std::string>& data,
                                    const ResultSet& set, const std::string& plots_dir,
                                    const std::map<std::string, std::string>& variables,
                                    std::vector<std::string>* failures) {
  if (data.empty()) return {};
  std::error_code link_error;
  if (std::filesystem::is_symlink(plots_dir, link_error)) {
    throw Error(fmt::format("{}: is a symbolic link, expected the folder the harness draws in", plots_dir));
  }
  if (find_program("gnuplot").empty()) {
    throw Error("gnuplot not found on PATH; install gnuplot-nox (bash .ci/install-deps), then "
                "run the experiment again to draw the plots");
  }
  remove_stale_drawings(plots_dir);
  // Variables every template may use: the title and the values to put tics at.
  std::set<int> measured_ranks;
  std::set<int> batch_sizes;
  std::set<int64_t> message_sizes;
  bool weak = true;
  for (const auto& run : set.runs()) {
    weak = weak && run.record.settings.scaling == "weak";
    if (!run.record.ok()) continue;
    measured_ranks.insert(run.record.settings.ranks);
    batch_sizes.insert(run.record.settings.batch_size);
    if (run.record.measurements->comm) {
      for (const auto& size : run.record.measurements->comm->sizes) message_sizes.insert(size.bytes);
    }
  }
  // Speedup of weak scaling compares time per sample, so it reads as a throughput ratio.
  std::string header = fmt::format(
      "EXPERIMENT = {}\nRANK_TICS = \"({})\"\nBATCH_TICS = \"({})\"\nSIZE_TICS = \"({})\"\n"
      "SCALING = {}\nREPEATS = {}\n",
      gnuplot_string(set.experiment().name), fmt::join(measured_ranks, ", "),
      fmt::join(batch_sizes, ", "), size_tics(message_sizes),
      gnuplot_string(weak ? "weak scaling" : "strong scaling"), set.experiment().repeats);
  for (const auto& [name, value] : variables) header += name + " = " + gnuplot_string(value) + "\n";

  std::vector<std::string> images;
  for (const auto& [name, contents] : data) {
    try {
      for (auto& image : draw_plot(name, contents, header, plots_dir)) images.push_back(std::move(image));
    } catch (const Error& error) {
      if (failures == nullptr) throw;
      remove_plot(plots_dir, name);
      failures->push_back(fmt::format("{}: {}", name, error.what()));
    }
  }
  return images;
}

void remove_plot(const std::string& plots_dir, const std::string& name) {
  for (const char* extension : {".svg", ".png", ".dat", ".gp"}) {
    // Only what the harness wrote: a link planted there stays (drawing refuses it, and says so).
    const std::string path = plots_dir + "/" + name + extension;
    std::error_code ignored;  // absent is fine
    if (std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ignored))) {
      std::filesystem::remove(path, ignored);
    }
  }
}

}  // namespace harness
