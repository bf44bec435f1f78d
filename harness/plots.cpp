#include "harness/plots.h"

#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/errors.h"
#include "harness/plot_templates.h"
#include "harness/process.h"

namespace harness {
namespace {

// Setting keys whose values differ between points: they label the lines.
std::vector<std::string> varying_keys(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> keys;
  if (rows.empty()) return keys;
  const Json first = to_json(rows.front().settings);
  for (const auto& [key, value] : first.items()) {
    if (key == "timeout_s") continue;
    for (const auto& row : rows) {
      if (to_json(row.settings)[key] != value) {
        keys.push_back(key);
        break;
      }
    }
  }
  return keys;
}

std::string label_for(const PointSettings& settings, const std::vector<std::string>& keys,
                      bool include_ranks) {
  const Json values = to_json(settings);
  std::string label;
  for (const auto& key : keys) {
    if (key == "ranks" && !include_ranks) continue;
    const Json& value = values[key];
    label += fmt::format("{}{}={}", label.empty() ? "" : " ", key,
                         value.is_string() ? value.get<std::string>() : value.dump());
  }
  if (label.empty()) label = settings.workload + " / " + settings.backend;
  if (include_ranks && label.find("ranks=") == std::string::npos) {
    label += fmt::format(" ranks={}", settings.ranks);
  }
  return label;
}

// gnuplot's columnheader reads the first line of a block as its title; quote it.
std::string block_title(const std::string& title) {
  std::string escaped;
  for (const char c : title) escaped += (c == '"' ? '\'' : c);
  return "\"" + escaped + "\"\n";
}

struct Series {
  std::string title;
  std::vector<const SummaryRow*> rows;  // in rank order
};

// Groups successful points into scaling curves: equal settings except ranks.
std::vector<Series> scaling_series(const std::vector<SummaryRow>& rows,
                                   const std::vector<std::string>& keys) {
  std::map<std::string, Series> by_title;
  std::vector<std::string> order;
  for (const auto& row : rows) {
    if (!row.ok || !row.scaling || !row.metrics) continue;
    const std::string title = label_for(row.settings, keys, false);
    if (by_title.count(title) == 0) order.push_back(title);
    by_title[title].title = title;
    by_title[title].rows.push_back(&row);
  }
  std::vector<Series> series;
  for (const auto& title : order) {
    Series s = by_title[title];
    std::sort(s.rows.begin(), s.rows.end(), [](const SummaryRow* a, const SummaryRow* b) {
      return a->settings.ranks < b->settings.ranks;
    });
    series.push_back(std::move(s));
  }
  return series;
}

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

}  // namespace

const std::string& plot_template(const std::string& name) {
  for (const auto& [template_name, text] : kPlotTemplates) {
    if (template_name == name) return text;
  }
  throw Error(fmt::format("no plot template named \"{}\"", name));
}

namespace {

// Plot name -> .dat contents for a training experiment.
std::map<std::string, std::string> training_plot_data(const std::vector<SummaryRow>& rows) {
  const std::vector<std::string> keys = varying_keys(rows);
  const std::vector<Series> series = scaling_series(rows, keys);

  std::map<std::string, std::string> data;  // plot name -> .dat contents
  if (!series.empty()) {
    // The ideal lines span the ranks that were measured, from the smallest baseline.
    std::set<int> all_ranks;
    int fewest_ranks = std::numeric_limits<int>::max();
    for (const auto& s : series) {
      for (const auto* row : s.rows) {
        all_ranks.insert(row->settings.ranks);
        fewest_ranks = std::min(fewest_ranks, row->settings.ranks);
      }
    }
    std::string speedup = block_title("ideal");
    std::string efficiency = block_title("ideal");
    for (const int ranks : all_ranks) {
      speedup += fmt::format("{} {}\n", ranks, static_cast<double>(ranks) / fewest_ranks);
      efficiency += fmt::format("{} 100\n", ranks);
    }
    std::string throughput;
    for (const auto& s : series) {
      speedup += "\n\n" + block_title(s.title);
      efficiency += "\n\n" + block_title(s.title);
      throughput += (throughput.empty() ? "" : "\n\n") + block_title(s.title);
      for (const auto* row : s.rows) {
        speedup += fmt::format("{} {:.6g}\n", row->settings.ranks, row->scaling->speedup);
        efficiency +=
            fmt::format("{} {:.6g}\n", row->settings.ranks, 100 * row->scaling->efficiency);
        throughput += fmt::format("{} {:.6g}\n", row->settings.ranks,
                                  row->metrics->throughput_samples_per_s);
      }
    }
    data["speedup"] = speedup;
    data["efficiency"] = efficiency;
    data["throughput"] = throughput;
  }

  std::string loss;
  for (const auto& row : rows) {
    if (!row.ok || row.epochs.empty()) continue;
    loss += (loss.empty() ? "" : "\n\n") + block_title(label_for(row.settings, keys, true));
    for (const auto& epoch : row.epochs) {
      loss += fmt::format("{} {:.6g}\n", epoch.at("epoch").get<int>(),
                          epoch.at("train_loss").get<double>());
    }
  }
  if (!loss.empty()) data["loss"] = loss;

  return data;
}

// Plot name -> .dat contents for a communication benchmark.
std::map<std::string, std::string> comm_plot_data(const std::vector<SummaryRow>& rows) {
  const std::vector<std::string> keys = varying_keys(rows);
  std::string bandwidth;
  std::string latency;
  for (const auto& row : rows) {
    if (!row.ok || row.message_sizes.empty()) continue;
    const std::string title = block_title(label_for(row.settings, keys, true));
    bandwidth += (bandwidth.empty() ? "" : "\n\n") + title;
    latency += (latency.empty() ? "" : "\n\n") + title;
    for (const auto& size : row.message_sizes) {
      bandwidth += fmt::format("{} {:.6g}\n", size.bytes, size.busbw_gbps);
      latency += fmt::format("{} {:.6g}\n", size.bytes, size.time_us_median);
    }
  }
  if (bandwidth.empty()) return {};
  return {{"bandwidth", bandwidth}, {"latency", latency}};
}

}  // namespace

std::vector<std::string> write_plots(const ResultsLayout& layout, const std::string& experiment_name,
                                     const std::string& kind, const std::vector<SummaryRow>& rows) {
  const std::map<std::string, std::string> data =
      kind == "comm" ? comm_plot_data(rows) : training_plot_data(rows);
  if (data.empty()) return {};
  if (find_program("gnuplot").empty()) {
    throw Error("gnuplot not found on PATH; install gnuplot-nox (bash .ci/install-deps), then "
                "run the experiment again to draw the plots");
  }

  // Variables every template may use: the title and the rank counts to put tics at.
  std::set<int> measured_ranks;
  for (const auto& row : rows) {
    if (row.ok) measured_ranks.insert(row.settings.ranks);
  }
  std::set<int64_t> message_sizes;
  for (const auto& row : rows) {
    for (const auto& size : row.message_sizes) message_sizes.insert(size.bytes);
  }
  const std::string header =
      fmt::format("EXPERIMENT = {}\nRANK_TICS = \"({})\"\nSIZE_TICS = \"({})\"\n",
                  gnuplot_string(experiment_name), fmt::join(measured_ranks, ", "),
                  size_tics(message_sizes));

  std::vector<std::string> images;
  for (const auto& [name, contents] : data) {
    const std::string base = layout.plots_dir() + "/" + name;
    write_file_atomically(base + ".dat", contents);
    const std::string script = header + plot_template(name) + plot_template("render");
    write_file_atomically(base + ".gp", script);

    ProcessRequest gnuplot;
    gnuplot.argv = {"gnuplot", name + ".gp"};
    gnuplot.working_directory = layout.plots_dir();
    gnuplot.log_path = layout.plots_dir() + "/gnuplot.log";
    gnuplot.timeout_s = 60;
    gnuplot.stop_on_interrupt = false;  // after Ctrl-C the plots of the completed points are still drawn
    const ProcessOutcome outcome = run_process(gnuplot);
    if (!outcome.ok()) {
      throw Error(fmt::format("gnuplot {}.gp failed ({}); see {}", name, outcome.describe(),
                              gnuplot.log_path));
    }
    for (const char* extension : {".png", ".svg"}) {
      const std::string image = base + extension;
      std::error_code error;
      if (std::filesystem::file_size(image, error) == 0 || error) {
        throw Error(fmt::format("gnuplot {}.gp wrote no {}; see {}", name, image, gnuplot.log_path));
      }
      images.push_back(image);
    }
  }
  return images;
}

}  // namespace harness
