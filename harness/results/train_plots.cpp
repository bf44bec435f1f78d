// TrainReport::plot_data: the training plots' data, from the result set.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "harness/results/plot_data.h"
#include "harness/results/scaling.h"
#include "harness/results/statistics.h"
#include "harness/results/train_report.h"
#include "schemes/registry.h"

namespace harness {
namespace {

using Curves = std::vector<std::pair<std::string, std::vector<const ConfigurationStats*>>>;

// "median low high" columns of an interval.
std::string interval_columns(const Interval& interval, double scale = 1) {
  return fmt::format("{:.6g} {:.6g} {:.6g}", scale * interval.median, scale * interval.low,
                     scale * interval.high);
}

// Configurations grouped into curves along `axis` ("ranks" or "batch_size"): equal settings
// except that key, sorted by it. Only configurations with a successful run.
// A configuration's place along a curve's axis: "ranks", "micro_batches" or "batch_size".
int64_t axis_value(const PointSettings& settings, const std::string& axis) {
  if (axis == "ranks") return settings.ranks;
  if (axis == "micro_batches") return micro_batches(settings);
  return settings.batch_size;
}

Curves curves_along(const std::vector<ConfigurationStats>& stats, const std::vector<std::string>& keys,
                    const std::string& axis, bool need_baseline) {
  std::vector<std::string> curve_keys;
  for (const auto& key : keys) {
    if (key != axis) curve_keys.push_back(key);
  }
  Curves curves;
  for (const auto& stat : stats) {
    if (stat.ok_runs == 0 || (need_baseline && stat.baseline < 0)) continue;
    const std::string title = curve_label(stat.settings, curve_keys, axis != "ranks");
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
      return axis_value(a->settings, axis) < axis_value(b->settings, axis);
    });
  }
  return curves;
}

// The measurements of the configuration's first successful run with an epoch; null when none has.
const TrainMeasurements* first_run_with_epochs(const ResultSet& set, const ConfigurationStats& stat) {
  for (const int r : stat.runs) {
    const Run& run = set.runs()[static_cast<std::size_t>(r)];
    if (run.metrics && !run.record.measurements->train->epochs.empty()) return &*run.record.measurements->train;
  }
  return nullptr;
}

// Per-epoch curves of a field against epoch (x = "epoch") or samples seen, one per configuration
// (its first successful run).
std::string epoch_curves(const ResultSet& set, const std::vector<std::string>& keys, bool by_samples,
                         double EpochMeasurement::*field, double scale) {
  std::string out;
  for (const auto& stat : set.configurations()) {
    const TrainMeasurements* train = first_run_with_epochs(set, stat);
    if (train == nullptr) continue;
    // A diverged run's NaN epochs are left out: gnuplot cannot scale an axis over them.
    std::string points;
    for (const auto& epoch : train->epochs) {
      const double value = epoch.*field;
      if (std::isfinite(value)) {
        points += fmt::format("{} {:.6g}\n", by_samples ? epoch.samples_seen : epoch.epoch, scale * value);
      }
    }
    if (points.empty()) continue;
    out += (out.empty() ? "" : "\n\n") + block_title(curve_label(stat.settings, keys, true)) + points;
  }
  return out;
}

// The training loss against samples seen, one curve per configuration: at each point of the loss
// curve the median over the configuration's runs (their windows end at the same samples: the
// loop is deterministic). Empty when no run has a loss curve (records before version 4).
std::string loss_curves(const ResultSet& set, const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& stat : set.configurations()) {
    std::vector<const std::vector<LossValue>*> curves;
    for (const int r : stat.runs) {
      const Run& run = set.runs()[static_cast<std::size_t>(r)];
      if (run.metrics && !run.record.measurements->train->loss_curve.empty()) {
        curves.push_back(&run.record.measurements->train->loss_curve);
      }
    }
    if (curves.empty()) continue;
    std::size_t length = curves.front()->size();
    for (const auto* curve : curves) length = std::min(length, curve->size());
    std::string points;
    for (std::size_t i = 0; i < length; ++i) {
      std::vector<double> losses;
      for (const auto* curve : curves) {
        // A diverged run's NaN values are left out: gnuplot cannot scale an axis over them.
        if (std::isfinite((*curve)[i].train_loss)) losses.push_back((*curve)[i].train_loss);
      }
      if (!losses.empty()) points += fmt::format("{} {:.6g}\n", (*curves.front())[i].samples_seen, median_of(losses));
    }
    if (points.empty()) continue;
    out += (out.empty() ? "" : "\n\n") + block_title(curve_label(stat.settings, keys, true)) + points;
  }
  return out;
}

// Where a step's time goes, per configuration (medians over its runs of the per-run means).
// The exposed time splits into waiting for the slowest training rank's compute and the exchange
// itself; records from before the wait was measured count all of it as exchange.
std::string breakdown(const ResultSet& set, const std::vector<std::string>& keys) {
  std::string out = "# configuration compute_ms wait_ms exchange_ms other_ms\n";
  bool any = false;
  for (const auto& stat : set.configurations()) {
    std::vector<double> compute, wait, exchange, other;
    for (const int r : stat.runs) {
      const Run& run = set.runs()[static_cast<std::size_t>(r)];
      if (!run.metrics) continue;
      const PointMetrics& m = *run.metrics;
      const double waiting = std::min(m.wait_time_s.value_or(0), m.exposed_comm_time_s);
      compute.push_back(1e3 * m.compute_time_s);
      wait.push_back(1e3 * waiting);
      exchange.push_back(1e3 * (m.exposed_comm_time_s - waiting));
      other.push_back(std::max(0.0, 1e3 * (m.step_time_s - m.compute_time_s - m.exposed_comm_time_s)));
    }
    if (compute.empty()) continue;
    const std::string label = curve_label(stat.settings, keys, true);
    out += fmt::format("{} {:.6g} {:.6g} {:.6g} {:.6g}\n", quoted_label(label), median_of(compute),
                       median_of(wait), median_of(exchange), median_of(other));
    any = true;
  }
  return any ? out : "";
}

// The lost efficiency of each configuration against its baseline, in parts (percentage points).
std::string efficiency_loss(const ResultSet& set, const std::vector<std::string>& keys) {
  std::string out = "# configuration compute_points communication_points waiting_points rest_points\n";
  bool any = false;
  for (std::size_t c = 0; c < set.configurations().size(); ++c) {
    const EfficiencyLoss& loss = set.efficiency_losses()[c];
    if (!loss.judged) continue;
    const std::string label = curve_label(set.configurations()[c].settings, keys, true);
    out += fmt::format("{} {:.6g} {:.6g} {:.6g} {:.6g}\n", quoted_label(label), 100 * loss.compute, 100 * loss.communication,
                       100 * loss.waiting, 100 * loss.rest);
    any = true;
  }
  return any ? out : "";
}

// Each training rank's sampled compute time per configuration with two training ranks or more
// (results/stragglers.h): "rank median p05 p95" in ms; a flagged configuration's title names its
// straggler.
std::string compute_by_rank(const ResultSet& set, const std::vector<std::string>& keys) {
  std::string out;
  for (std::size_t c = 0; c < set.configurations().size(); ++c) {
    const Stragglers& stragglers = set.stragglers()[c];
    if (!stragglers.measured || stragglers.median_compute_s <= 0) continue;
    std::string title = curve_label(set.configurations()[c].settings, keys, true);
    if (const Straggling* flagged = stragglers.flagged_entry()) {
      title += flagged->rank >= 0 ? fmt::format(" (straggler: rank {}{})", flagged->rank,
                                                flagged->host.empty() ? "" : ", " + flagged->host)
                                  : fmt::format(" (straggler: host {})", flagged->host);
    }
    std::string points;
    for (const Straggling& rank : stragglers.ranks) {
      points += fmt::format("{} {:.6g} {:.6g} {:.6g}\n", rank.rank, 1e3 * rank.compute_median_s,
                            1e3 * rank.compute_p05_s, 1e3 * rank.compute_p95_s);
    }
    out += (out.empty() ? "" : "\n\n") + block_title(title) + points;
  }
  return out;
}

// The speedup, efficiency and Karp-Flatt plots' data along ranks, with ideal lines; `ideal_line`:
// whether the ideal speedup is the rank ratio (else 1).
void add_scaling_plots(const std::vector<ConfigurationStats>& stats, const Curves& scaling, bool ideal_line,
                       std::map<std::string, std::string>& data) {
  // The ideal lines span the ranks that were measured, from the smallest baseline.
  std::set<int> all_ranks;
  int fewest_ranks = std::numeric_limits<int>::max();
  for (const auto& [title, curve] : scaling) {
    for (const auto* stat : curve) {
      all_ranks.insert(stat->settings.ranks);
      fewest_ranks = std::min(fewest_ranks, stats[static_cast<std::size_t>(stat->baseline)].settings.ranks);
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

// Throughput with its interval along `axis`: "ranks" or "batch_size".
std::string throughput_curves(const std::vector<ConfigurationStats>& stats, const std::vector<std::string>& keys,
                              const std::string& axis) {
  std::string out;
  for (const auto& [title, curve] : curves_along(stats, keys, axis, false)) {
    out += (out.empty() ? "" : "\n\n") + block_title(title);
    for (const auto* stat : curve) {
      out += fmt::format("{} {}\n", axis_value(stat->settings, axis), interval_columns(stat->throughput));
    }
  }
  return out;
}

// Training time (evaluation excluded) at which a run had seen `samples`: the epochs' times summed,
// the epoch that holds it taken at a steady pace. The samples seen in warm-up steps count with the
// first epoch, whose time leaves them out.
double training_time_at(const std::vector<EpochMeasurement>& epochs, int64_t samples) {
  double time_s = 0;
  int64_t seen = 0;
  for (const auto& epoch : epochs) {
    if (samples <= epoch.samples_seen) {
      const auto in_epoch = static_cast<double>(epoch.samples_seen - seen);
      return time_s + (in_epoch > 0 ? epoch.train_time_s * static_cast<double>(samples - seen) / in_epoch : 0);
    }
    time_s += epoch.train_time_s;
    seen = epoch.samples_seen;
  }
  return time_s;
}

// Held-out accuracy (after each epoch) or the training loss (its loss curve, finer) against the
// training time, one curve per configuration (its first successful run): what time to accuracy
// reads, which schemes trade between speed and the model's progress per sample.
std::string time_curves(const ResultSet& set, const std::vector<std::string>& keys, bool accuracy) {
  std::string out;
  for (const auto& stat : set.configurations()) {
    const TrainMeasurements* found = first_run_with_epochs(set, stat);
    if (found == nullptr) continue;
    const TrainMeasurements& train = *found;
    std::string points;
    if (accuracy) {
      double time_s = 0;
      for (const auto& epoch : train.epochs) {
        time_s += epoch.train_time_s;
        if (std::isfinite(epoch.test_accuracy)) {
          points += fmt::format("{:.6g} {:.6g}\n", time_s, 100 * epoch.test_accuracy);
        }
      }
    } else if (!train.loss_curve.empty()) {
      for (const auto& value : train.loss_curve) {
        if (value.samples_seen > train.epochs.back().samples_seen) break;  // past the last finished epoch
        if (std::isfinite(value.train_loss) && value.train_loss > 0) {
          const double time_s = training_time_at(train.epochs, value.samples_seen);
          points += fmt::format("{:.6g} {:.6g}\n", time_s, value.train_loss);
        }
      }
    } else {
      double time_s = 0;
      for (const auto& epoch : train.epochs) {
        time_s += epoch.train_time_s;
        if (std::isfinite(epoch.train_loss) && epoch.train_loss > 0) {
          points += fmt::format("{:.6g} {:.6g}\n", time_s, epoch.train_loss);
        }
      }
    }
    if (points.empty()) continue;
    out += (out.empty() ? "" : "\n\n") + block_title(curve_label(stat.settings, keys, true)) + points;
  }
  return out;
}

// Whether a plot's data has a value that a log-scale y axis can show (the second column above 0):
// gnuplot refuses a plot whose every point is undefined there (a loss that reached 0 at once).
bool has_positive_y(const std::string& data) {
  std::istringstream lines(data);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '"') continue;
    std::istringstream columns(line);
    double x = 0;
    double y = 0;
    if (columns >> x >> y && y > 0) return true;
  }
  return false;
}

// Scheme pipeline: throughput against micro-batches (a curve per schedule and layout), the measured
// bubble against the predicted one, and each stage's peak activation memory.
void add_pipeline_plots(const ResultSet& set, const std::vector<ConfigurationStats>& stats,
                        const std::vector<std::string>& keys, std::map<std::string, std::string>& data) {
  std::vector<ConfigurationStats> pipelined;
  for (const auto& stat : stats) {
    if (stat.settings.scheme == "pipeline") pipelined.push_back(stat);
  }
  if (pipelined.empty()) return;
  std::string throughput;
  std::string bubble;
  for (const auto& [title, curve] : curves_along(pipelined, keys, "micro_batches", false)) {
    std::string throughput_rows;
    std::string bubble_rows;
    for (const auto* stat : curve) {
      throughput_rows += fmt::format("{} {}\n", micro_batches(stat->settings), interval_columns(stat->throughput));
      std::vector<double> measured;
      std::vector<double> predicted;
      for (const int r : stat->runs) {
        const Run& run = set.runs()[static_cast<std::size_t>(r)];
        if (!run.metrics || !run.metrics->pipeline_bubble) continue;
        measured.push_back(*run.metrics->pipeline_bubble);
        predicted.push_back(*run.metrics->pipeline_bubble_predicted);
      }
      if (!measured.empty()) {
        bubble_rows += fmt::format("{:.6g} {:.6g}\n", 100 * predicted.front(), 100 * median_of(measured));
      }
    }
    if (curve.size() > 1) throughput += (throughput.empty() ? "" : "\n\n") + block_title(title) + throughput_rows;
    if (!bubble_rows.empty()) bubble += (bubble.empty() ? "" : "\n\n") + block_title(title) + bubble_rows;
  }
  if (!throughput.empty()) data["pipeline_throughput"] = std::move(throughput);
  if (!bubble.empty()) data["pipeline_bubble"] = std::move(bubble);
  std::string memory;
  for (const auto& stat : pipelined) {
    const TrainMeasurements* train = first_run_with_epochs(set, stat);
    if (train == nullptr || !train->pipeline) continue;
    std::string rows;
    for (std::size_t s = 0; s < train->pipeline->stage.size(); ++s) {
      rows += fmt::format("{} {:.6g}\n", s, static_cast<double>(train->pipeline->stage[s].peak_activation_bytes) / 1e6);
    }
    memory += (memory.empty() ? "" : "\n\n") + block_title(curve_label(stat.settings, keys, true)) + rows;
  }
  if (!memory.empty()) data["pipeline_memory"] = std::move(memory);
}

// The loss along the way, for one epoch or many (records before version 4: per epoch).
void add_loss_and_accuracy_plots(const ResultSet& set, const std::vector<std::string>& keys,
                                 std::map<std::string, std::string>& data) {
  if (std::string curves = loss_curves(set, keys); has_positive_y(curves)) data["loss_samples"] = std::move(curves);
  if (std::string curves = time_curves(set, keys, false); has_positive_y(curves)) data["loss_time"] = std::move(curves);
  if (std::string curves = time_curves(set, keys, true); !curves.empty()) data["accuracy_time"] = std::move(curves);
  // Per-epoch curves need two epochs: with one, each configuration would be a lone point.
  std::size_t most_epochs = 0;
  for (const auto& run : set.runs()) {
    if (run.metrics) most_epochs = std::max(most_epochs, run.record.measurements->train->epochs.size());
  }
  if (most_epochs < 2) return;
  const std::tuple<const char*, bool, double EpochMeasurement::*, double> epoch_plots[] = {
      {"loss", false, &EpochMeasurement::train_loss, 1.0},
      {"loss_samples", true, &EpochMeasurement::train_loss, 1.0},
      {"accuracy", false, &EpochMeasurement::test_accuracy, 100.0},
      {"accuracy_samples", true, &EpochMeasurement::test_accuracy, 100.0}};
  for (const auto& [name, by_samples, field, scale] : epoch_plots) {
    if (data.count(name) > 0) continue;  // the loss curve's, finer than the epochs'
    std::string curves = epoch_curves(set, keys, by_samples, field, scale);
    if (!curves.empty()) data[name] = std::move(curves);
  }
  for (const char* log_scale : {"loss", "loss_samples"}) {
    if (data.count(log_scale) > 0 && !has_positive_y(data[log_scale])) data.erase(log_scale);
  }
}

}  // namespace

std::map<std::string, std::string> TrainReport::plot_data(const ResultSet& set) const {
  const Experiment& experiment = set.experiment();
  const auto& stats = set.configurations();
  std::vector<PointSettings> all_settings;
  for (const auto& run : set.runs()) all_settings.push_back(run.record.settings);
  const std::vector<std::string> keys = varying_keys(all_settings);
  // Keys that move with the ranks vary along a scaling curve (weak scaling grows the data with
  // the ranks): those zipped with ranks, and those a baseline that names ranks names too. They do
  // not split curves. A baseline at the same ranks ({"lr": 0.5}) is another curve's, and its key
  // does split them.
  const std::vector<std::string> zipped = settings_zipped_with_ranks(experiment.sweep);
  const bool baseline_moves_ranks = experiment.baseline.contains("ranks");
  std::vector<std::string> curve_keys;
  for (const auto& key : keys) {
    const bool moves_with_ranks = std::find(zipped.begin(), zipped.end(), key) != zipped.end() ||
                                  (baseline_moves_ranks && experiment.baseline.contains(key));
    if (!moves_with_ranks || key == "ranks") curve_keys.push_back(key);
  }
  // The ideal speedup is the rank ratio when the baseline differs in ranks; against another
  // backend (say) at the same ranks it is 1.
  const bool ideal_line = experiment.baseline.empty() || experiment.baseline.contains("ranks");
  std::map<std::string, std::string> data;

  const Curves scaling = curves_along(stats, curve_keys, "ranks", true);
  if (!scaling.empty()) add_scaling_plots(stats, scaling, ideal_line, data);

  // Along the batch size too when that varies.
  if (std::string curves = throughput_curves(stats, curve_keys, "ranks"); !curves.empty()) {
    data["throughput"] = std::move(curves);
  }
  if (std::find(keys.begin(), keys.end(), "batch_size") != keys.end()) {
    if (std::string curves = throughput_curves(stats, keys, "batch_size"); !curves.empty()) {
      data["throughput_batch"] = std::move(curves);
    }
  }

  add_loss_and_accuracy_plots(set, keys, data);
  add_pipeline_plots(set, stats, keys, data);
  if (std::string steps = breakdown(set, keys); !steps.empty()) data["breakdown"] = std::move(steps);
  if (std::string lost = efficiency_loss(set, keys); !lost.empty()) data["efficiency_loss"] = std::move(lost);
  if (std::string by_rank = compute_by_rank(set, keys); !by_rank.empty()) data["compute_by_rank"] = std::move(by_rank);
  return data;
}

}  // namespace harness
