#include "harness/results/plots.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>
#include <set>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/results/plot_templates.h"
#include "harness/common/process.h"

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

// "median low high" columns of an interval.
std::string interval_columns(const Interval& interval, double scale = 1) {
  return fmt::format("{:.6g} {:.6g} {:.6g}", scale * interval.median, scale * interval.low,
                     scale * interval.high);
}

// Configurations grouped into curves along `axis` ("ranks" or "batch_size"): equal settings
// except that key, sorted by it. Only configurations with a successful run.
std::vector<std::pair<std::string, std::vector<const ConfigurationStats*>>> curves_along(
    const std::vector<ConfigurationStats>& stats, const std::vector<std::string>& keys,
    const std::string& axis, bool need_baseline) {
  std::vector<std::string> curve_keys;
  for (const auto& key : keys) {
    if (key != axis) curve_keys.push_back(key);
  }
  std::vector<std::pair<std::string, std::vector<const ConfigurationStats*>>> curves;
  for (const auto& stat : stats) {
    if (stat.ok_runs == 0 || (need_baseline && stat.baseline < 0)) continue;
    const std::string title = label_for(stat.settings, curve_keys, axis != "ranks");
    auto found = std::find_if(curves.begin(), curves.end(),
                              [&title](const auto& curve) { return curve.first == title; });
    if (found == curves.end()) {
      curves.emplace_back(title, std::vector<const ConfigurationStats*>{});
      found = curves.end() - 1;
    }
    found->second.push_back(&stat);
  }
  for (auto& curve : curves) {
    std::sort(curve.second.begin(), curve.second.end(), [&axis](const auto* a, const auto* b) {
      return axis == "ranks" ? a->settings.ranks < b->settings.ranks
                             : a->settings.batch_size < b->settings.batch_size;
    });
  }
  return curves;
}

// Per-epoch curves of `field` against epoch (x = "epoch") or samples seen, one per configuration
// (its first successful run).
std::string epoch_curves(const std::vector<SummaryRow>& rows,
                         const std::vector<ConfigurationStats>& stats,
                         const std::vector<std::string>& keys, const char* x, const char* field,
                         double scale) {
  std::string out;
  for (const auto& stat : stats) {
    const auto run = std::find_if(stat.runs.begin(), stat.runs.end(),
                                  [&rows](int r) { return rows[r].ok && !rows[r].epochs.empty(); });
    if (run == stat.runs.end()) continue;
    // A diverged run's NaN epochs are left out: gnuplot cannot scale an axis over them.
    std::string points;
    for (const auto& epoch : rows[*run].epochs) {
      const double value = epoch_value(epoch, field);
      if (std::isfinite(value)) {
        points += fmt::format("{} {:.6g}\n", epoch.at(x).get<int64_t>(), scale * value);
      }
    }
    if (points.empty()) continue;
    out += (out.empty() ? "" : "\n\n") + block_title(label_for(stat.settings, keys, true)) + points;
  }
  return out;
}

// Plot name -> .dat contents for a training experiment.
std::map<std::string, std::string> training_plot_data(const std::vector<SummaryRow>& rows,
                                                      const std::vector<ConfigurationStats>& stats,
                                                      bool ideal_line, const Json& baseline) {
  const std::vector<std::string> keys = varying_keys(rows);
  // Keys that the baseline names vary along a scaling curve (weak scaling grows the data with
  // the ranks): they do not split curves.
  std::vector<std::string> curve_keys;
  for (const auto& key : keys) {
    if (!baseline.contains(key) || key == "ranks") curve_keys.push_back(key);
  }
  std::map<std::string, std::string> data;  // plot name -> .dat contents

  const auto scaling = curves_along(stats, curve_keys, "ranks", true);
  if (!scaling.empty()) {
    // The ideal lines span the ranks that were measured, from the smallest baseline.
    std::set<int> all_ranks;
    int fewest_ranks = std::numeric_limits<int>::max();
    for (const auto& [title, curve] : scaling) {
      for (const auto* stat : curve) {
        all_ranks.insert(stat->settings.ranks);
        fewest_ranks = std::min(fewest_ranks, stats[stat->baseline].settings.ranks);
      }
    }
    std::string speedup = block_title("ideal");
    std::string efficiency = block_title("ideal");
    for (const int ranks : all_ranks) {
      const double ideal = ideal_line ? static_cast<double>(ranks) / fewest_ranks : 1.0;
      speedup += fmt::format("{} {} {} {}\n", ranks, ideal, ideal, ideal);
      efficiency += fmt::format("{} 100 100 100\n", ranks);
    }
    std::string karp_flatt;
    for (const auto& [title, curve] : scaling) {
      speedup += "\n\n" + block_title(title);
      efficiency += "\n\n" + block_title(title);
      std::string serial;
      for (const auto* stat : curve) {
        speedup += fmt::format("{} {}\n", stat->settings.ranks, interval_columns(stat->speedup));
        efficiency += fmt::format("{} {}\n", stat->settings.ranks, interval_columns(stat->efficiency, 100));
        if (stat->karp_flatt) serial += fmt::format("{} {:.6g}\n", stat->settings.ranks, *stat->karp_flatt);
      }
      if (!serial.empty()) karp_flatt += (karp_flatt.empty() ? "" : "\n\n") + block_title(title) + serial;
    }
    data["speedup"] = speedup;
    data["efficiency"] = efficiency;
    if (!karp_flatt.empty()) data["karp_flatt"] = karp_flatt;
  }

  // Throughput with its interval along ranks, or along the batch size when that varies.
  const auto throughput_curves = [&stats](const std::vector<std::string>& curve_keys_for,
                                          const std::string& axis) {
    std::string out;
    for (const auto& [title, curve] : curves_along(stats, curve_keys_for, axis, false)) {
      out += (out.empty() ? "" : "\n\n") + block_title(title);
      for (const auto* stat : curve) {
        const int x = axis == "ranks" ? stat->settings.ranks : stat->settings.batch_size;
        out += fmt::format("{} {}\n", x, interval_columns(stat->throughput));
      }
    }
    return out;
  };
  if (std::string curves = throughput_curves(curve_keys, "ranks"); !curves.empty()) {
    data["throughput"] = std::move(curves);
  }
  if (std::find(keys.begin(), keys.end(), "batch_size") != keys.end()) {
    if (std::string curves = throughput_curves(keys, "batch_size"); !curves.empty()) {
      data["throughput_batch"] = std::move(curves);
    }
  }

  const std::pair<const char*, std::tuple<const char*, const char*, double>> epoch_plots[] = {
      {"loss", {"epoch", "train_loss", 1.0}},
      {"loss_samples", {"samples_seen", "train_loss", 1.0}},
      {"accuracy", {"epoch", "test_accuracy", 100.0}},
      {"accuracy_samples", {"samples_seen", "test_accuracy", 100.0}}};
  // Curves need two epochs: with one, each configuration would be a lone point.
  std::size_t most_epochs = 0;
  for (const auto& row : rows) most_epochs = std::max(most_epochs, row.ok ? row.epochs.size() : 0);
  for (const auto& [name, spec] : epoch_plots) {
    if (most_epochs < 2) break;
    const auto& [x, field, scale] = spec;
    std::string curves = epoch_curves(rows, stats, keys, x, field, scale);
    if (!curves.empty()) data[name] = std::move(curves);
  }

  // Where a step's time goes, per configuration (medians over its runs of the per-run means).
  // The exposed time splits into waiting for the slowest training rank's compute and the
  // exchange itself; records from before the wait was measured count all of it as exchange.
  std::string breakdown = "# configuration compute_ms wait_ms exchange_ms other_ms\n";
  bool any = false;
  for (const auto& stat : stats) {
    std::vector<double> compute, wait, exchange, other;
    for (const int r : stat.runs) {
      if (!rows[r].ok || !rows[r].metrics) continue;
      const PointMetrics& m = *rows[r].metrics;
      const double waiting = std::min(m.wait_time_s.value_or(0), m.exposed_comm_time_s);
      compute.push_back(1e3 * m.compute_time_s);
      wait.push_back(1e3 * waiting);
      exchange.push_back(1e3 * (m.exposed_comm_time_s - waiting));
      other.push_back(std::max(0.0, 1e3 * (m.step_time_s - m.compute_time_s - m.exposed_comm_time_s)));
    }
    if (compute.empty()) continue;
    std::string label = label_for(stat.settings, keys, true);
    std::replace(label.begin(), label.end(), '"', '\'');
    breakdown += fmt::format("\"{}\" {:.6g} {:.6g} {:.6g} {:.6g}\n", label, median_of(compute),
                             median_of(wait), median_of(exchange), median_of(other));
    any = true;
  }
  if (any) data["breakdown"] = breakdown;
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

std::vector<std::string> write_plots(const ResultsLayout& layout, const Experiment& experiment,
                                     const std::vector<SummaryRow>& rows) {
  const std::string& experiment_name = experiment.name;
  // The ideal speedup is the rank ratio when the baseline differs in ranks; against another
  // backend (say) at the same ranks it is 1.
  const bool ideal_line = experiment.baseline.empty() || experiment.baseline.contains("ranks");
  const std::map<std::string, std::string> data =
      experiment.base.kind == Kind::kComm
          ? comm_plot_data(rows)
          : training_plot_data(rows, summary_stats(rows, experiment.baseline), ideal_line,
                               experiment.baseline);
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
  std::set<int> batch_sizes;
  for (const auto& row : rows) {
    if (row.ok) batch_sizes.insert(row.settings.batch_size);
  }
  // Speedup of weak scaling compares time per sample, so it reads as a throughput ratio.
  const bool weak = std::all_of(rows.begin(), rows.end(),
                                [](const SummaryRow& row) { return row.settings.scaling == "weak"; });
  const std::string header = fmt::format(
      "EXPERIMENT = {}\nRANK_TICS = \"({})\"\nBATCH_TICS = \"({})\"\nSIZE_TICS = \"({})\"\n"
      "SCALING = {}\nREPEATS = {}\n",
      gnuplot_string(experiment_name), fmt::join(measured_ranks, ", "), fmt::join(batch_sizes, ", "),
      size_tics(message_sizes), gnuplot_string(weak ? "weak scaling" : "strong scaling"),
      experiment.repeats);

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
