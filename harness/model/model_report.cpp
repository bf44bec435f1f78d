#include "harness/model/model_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/model/sample_groups.h"
#include "harness/results/plot_data.h"
#include "harness/results/plots.h"
#include "harness/results/results_directory.h"
#include "harness/results/statistics.h"
#include "harness/results/table.h"

namespace harness {
namespace {

constexpr int kModelSchemaVersion = 1;

// "12.5%", signed.
std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

// "2.3 GB/s" for a time per byte; "-" when it is 0 (the fit found no such cost).
std::string rate(double seconds_per_byte) {
  return seconds_per_byte > 0 ? fmt::format("{:.2f}", 1e-9 / seconds_per_byte) : "-";
}

// The message sizes a fit saw (its residuals hold one sample per size, rank count and repeat).
std::size_t distinct_sizes(const BackendCostFit& fit) {
  std::set<int64_t> sizes;
  for (const auto& r : fit.residuals) sizes.insert(r.sample.bytes);
  return sizes.size();
}

std::string fit_table(const CostModel& model) {
  using Row = const BackendCostFit*;
  const std::vector<ConsoleColumn<Row>> columns = {
      {"backend", "", 10, true, [](Row f) { return group_label(f->backend, f->across_nodes, f->build); }},
      {"alpha", "us", 8, false, [](Row f) { return fmt::format("{:.2f}", 1e6 * f->parameters.alpha_s); }},
      {"beta", "ns/B", 8, false, [](Row f) { return fmt::format("{:.4f}", 1e9 * f->parameters.beta_s_per_byte); }},
      {"1/beta", "GB/s", 7, false, [](Row f) { return rate(f->parameters.beta_s_per_byte); }},
      {"gamma", "ns/B", 8, false, [](Row f) { return fmt::format("{:.4f}", 1e9 * f->parameters.gamma_s_per_byte); }},
      {"1/gamma", "GB/s", 7, false, [](Row f) { return rate(f->parameters.gamma_s_per_byte); }},
      {"rms resid", "", 9, false, [](Row f) { return fmt::format("{:.1f}%", 100 * f->rms_relative); }},
      {"max resid", "", 9, false, [](Row f) { return percent(f->max_relative); }},
      {"sizes", "", 5, false, [](Row f) { return std::to_string(distinct_sizes(*f)); }},
      {"form", "T(p, n)", 0, true, [](Row f) { return cost_formula(f->form); }},
  };
  std::vector<Row> rows;
  for (const auto& fit : model.fits) rows.push_back(&fit);
  return format_console_table(columns, rows);
}

// One row per size and one column per backend and rank count: fitted / measured − 1, the median
// over the repeats (one repeat's would stand for all of them).
std::string residual_table(const CostModel& model) {
  std::vector<std::pair<std::string, std::map<int64_t, std::vector<double>>>> series;
  std::set<int64_t> sizes;
  for (const auto& fit : model.fits) {
    for (const auto& r : fit.residuals) {
      const std::string name =
          fmt::format("{} p={}", group_label(fit.backend, fit.across_nodes, fit.build), r.sample.ranks);
      auto found = std::find_if(series.begin(), series.end(), [&](const auto& s) { return s.first == name; });
      if (found == series.end()) found = series.insert(series.end(), {name, {}});
      found->second[r.sample.bytes].push_back(r.relative);
      sizes.insert(r.sample.bytes);
    }
  }
  std::size_t width = 14;
  for (const auto& [name, values] : series) width = std::max(width, name.size());
  std::string out = fmt::format("{:>10}", "bytes");
  for (const auto& [name, values] : series) out += fmt::format(" {:>{}}", name, width);
  out += "\n";
  for (const int64_t bytes : sizes) {
    out += fmt::format("{:>10}", bytes);
    for (const auto& [name, values] : series) {
      const auto found = values.find(bytes);
      out += fmt::format(" {:>{}}", found == values.end() ? "" : percent(median_of(found->second)), width);
    }
    out += "\n";
  }
  return out;
}

std::string fit_plot_data(const CostModel& model) {
  std::string data;
  for (const auto& fit : model.fits) {
    int ranks = -1;
    for (const auto& r : fit.residuals) {
      if (r.sample.ranks != ranks) {
        if (ranks != -1) data += "\n\n";
        ranks = r.sample.ranks;
        data += block_title(fmt::format("{} ranks={}", group_label(fit.backend, fit.across_nodes, fit.build), ranks));
      }
      data += fmt::format("{} {:.6g} {:.6g}\n", r.sample.bytes, 1e6 * r.sample.time_s, 1e6 * r.fitted_s);
    }
    data += "\n\n";
  }
  // Blocks are separated, not ended: a last separator would make an empty block gnuplot warns of.
  while (data.size() > 1 && data.ends_with("\n\n")) data.pop_back();
  return data;
}

std::string prediction_plot_data(const TrainingPrediction& prediction) {
  std::set<int> ranks;
  for (const auto& family : prediction.families) {
    for (const auto& step : family.steps) ranks.insert(step.ranks);
  }
  std::string data = block_title("ideal");
  for (const int r : ranks) data += fmt::format("{} {}\n", r, r);
  for (const auto& family : prediction.families) {
    data += "\n\n" + block_title(family.label);
    for (const auto& s : family.steps) {
      data += fmt::format("{} {:.6g} {:.6g} {}\n", s.ranks, s.speedup, s.speedup_overlap,
                          s.measured_speedup ? fmt::format("{:.6g}", *s.measured_speedup) : "nan");
    }
  }
  return data;
}

std::string milliseconds(double seconds) { return fmt::format("{:.3f}", 1e3 * seconds); }
std::string milliseconds(const std::optional<double>& seconds) { return seconds ? milliseconds(*seconds) : ""; }

}  // namespace

CostModel fit_comm_run(const ResultSet& comm, const std::string& comm_dir) {
  if (comm.kind() != Kind::kComm) {
    throw ConfigError(fmt::format("{}: not a comm benchmark's results (experiment kind train); give the comm run "
                                  "first and the training run with --predict",
                                  comm_dir));
  }
  std::vector<const PointRecord*> records;
  for (const Run& run : comm.runs()) records.push_back(&run.record);
  const SampleGroups groups = group_cost_samples(records, comm_dir);
  CostModel model;
  model.comm_dir = comm_dir;
  model.left_out = groups.left_out;
  for (const SampleGroup& group : groups.groups) {
    try {
      BackendCostFit fit = fit_cost_model(group.backend, group.samples);
      fit.across_nodes = group.across_nodes;
      fit.build = group.build;
      model.fits.push_back(std::move(fit));
    } catch (const Error& error) {
      const std::string text = fmt::format("{}: {}{}{}", comm_dir, group.build.empty() ? "" : "build " + group.build + ": ",
                                           group.across_nodes ? "across nodes: " : "", error.what());
      // The run's records cannot be fitted: bad input (exit 2), as the error it wraps says.
      if (dynamic_cast<const ConfigError*>(&error) != nullptr) throw ConfigError(text);
      throw Error(text);
    }
  }
  model.hosts = static_cast<int>(groups.hosts.size());
  model.max_ranks = groups.max_ranks;
  return model;
}

std::map<std::string, BackendCostFit> prediction_fits(const CostModel& model, const std::set<std::string>& train_builds,
                                                      std::vector<std::string>& notes) {
  std::set<std::string> builds;
  for (const auto& fit : model.fits) builds.insert(fit.build);
  // Fits of several builds: the training run's one build picks whose.
  const bool by_build = builds.size() > 1;
  if (by_build && (train_builds.size() != 1 || builds.count(*train_builds.begin()) == 0)) {
    throw ConfigError(fmt::format(
        "--predict: {} fitted {} builds ({}): expected a training run of one of them, got a run of build(s) {}",
        model.comm_dir, builds.size(), fmt::join(builds, ", "),
        train_builds.empty() ? std::string("none") : fmt::format("{}", fmt::join(train_builds, ", "))));
  }
  std::map<std::string, BackendCostFit> fits;
  for (const auto& fit : model.fits) {
    if (by_build && fit.build != *train_builds.begin()) continue;
    const auto found = fits.find(fit.backend);
    if (found == fits.end()) {
      fits[fit.backend] = fit;
      continue;
    }
    if (fit.across_nodes) found->second = fit;
    notes.push_back(fmt::format("backend {} is predicted with its fit across nodes; its one-node fit is in model.json",
                                fit.backend));
  }
  return fits;
}

std::string cost_model_console(const CostModel& model) {
  std::string out = fmt::format("Cost model of {} (p ranks, n bytes; residual = fitted / measured - 1)\n", model.comm_dir);
  out += fit_table(model);
  for (const auto& line : model.left_out) out += "Left out: " + line + "\n";
  out += "\nResiduals by message size (median over repeats):\n" + residual_table(model);
  return out;
}

std::string prediction_console(const TrainingPrediction& prediction) {
  using Row = const PredictedStep*;
  const std::vector<ConsoleColumn<Row>> columns = {
      {"ranks", "", 6, false, [](Row s) { return std::to_string(s->ranks); }},
      {"batch", "/rank", 6, false, [](Row s) { return std::to_string(s->per_rank_batch); }},
      {"compute", "ms", 9, false, [](Row s) { return milliseconds(s->compute_s); }},
      {"comm", "ms", 9, false, [](Row s) { return milliseconds(s->comm_s); }},
      {"measured", "ms", 9, false, [](Row s) { return milliseconds(s->measured_comm_s); }},
      {"step", "ms", 9, false, [](Row s) { return milliseconds(s->step_s); }},
      {"overlap", "ms", 9, false, [](Row s) { return milliseconds(s->step_overlap_s); }},
      {"measured", "ms", 9, false, [](Row s) { return milliseconds(s->measured_step_s); }},
      {"speedup", "x", 8, false, [](Row s) { return fmt::format("{:.2f}", s->speedup); }},
      {"overlap", "x", 8, false, [](Row s) { return fmt::format("{:.2f}", s->speedup_overlap); }},
      {"measured", "x", 8, false,
       [](Row s) { return s->measured_speedup ? fmt::format("{:.2f}", *s->measured_speedup) : ""; }},
      {"effic.", "%", 6, false, [](Row s) { return fmt::format("{:.0f}", 100 * s->efficiency); }},
      {"overlap", "%", 7, false, [](Row s) { return fmt::format("{:.0f}", 100 * s->efficiency_overlap); }},
      {"fit", "", 7, false, [](Row s) { return std::string(s->extrapolated ? "beyond" : ""); }},
  };
  std::string out;
  for (const auto& family : prediction.families) {
    out += fmt::format("\n{}: {:.1f} MB of gradients in {} bucket(s), compute {:.3f} ms per sample at {} rank(s){}\n",
                       family.label, 1e-6 * static_cast<double>(family.gradient_bytes), family.buckets,
                       1e3 * family.compute_per_sample_s, family.base_ranks,
                       family.overlap ? " (runs with overlap)" : "");
    std::vector<Row> rows;
    for (const auto& step : family.steps) rows.push_back(&step);
    out += format_console_table(columns, rows);
    if (std::ranges::any_of(family.steps, &PredictedStep::extrapolated)) {
      out += "fit beyond: more ranks or larger buckets than the comm run measured; the forms extrapolate\n";
    }
  }
  for (const auto& skipped : prediction.skipped) out += "not predicted: " + skipped + "\n";
  out += "\nAssumptions:\n";
  for (const auto& assumption : prediction.assumptions) out += "  - " + assumption + "\n";
  return out;
}

std::vector<std::string> write_cost_model(const CostModel& model, const ResultSet& comm) {
  const ResultsDirectory directory(model.comm_dir);
  Json fits = Json::array();
  for (const auto& fit : model.fits) fits.push_back(to_json(fit));
  const Json json = {{"schema_version", kModelSchemaVersion},
                     {"comm_run", model.comm_dir},
                     {"hosts", model.hosts},
                     {"max_ranks", model.max_ranks},
                     {"left_out", model.left_out},
                     {"units", {{"alpha_us", "microseconds per message"},
                                {"beta_ns_per_byte", "nanoseconds per byte moved"},
                                {"gamma_ns_per_byte", "nanoseconds per byte reduced"}}},
                     {"backends", fits}};
  std::vector<std::string> written = {model.comm_dir + "/model.json", model.comm_dir + "/model.csv"};
  write_file_atomically(written[0], json.dump(2) + "\n");
  std::string csv = "backend,across_nodes,build,ranks,bytes,measured_s,fitted_s,relative_residual\n";
  for (const auto& fit : model.fits) {
    for (const auto& r : fit.residuals) {
      csv += fmt::format("{},{},{},{},{},{},{},{}\n", fit.backend, fit.across_nodes, fit.build, r.sample.ranks,
                         r.sample.bytes, csv_number(r.sample.time_s),
                         csv_number(r.fitted_s), csv_number(r.relative));
    }
  }
  write_file_atomically(written[1], csv);
  std::filesystem::create_directories(directory.plots_dir());
  for (auto& image : draw_plots({{"model_fit", fit_plot_data(model)}}, comm, directory.plots_dir())) {
    written.push_back(std::move(image));
  }
  return written;
}

std::vector<std::string> write_prediction(const TrainingPrediction& prediction, const CostModel& model,
                                          const ResultSet& train, const std::string& train_dir) {
  const ResultsDirectory directory(train_dir);
  Json json = to_json(prediction);
  json["schema_version"] = kModelSchemaVersion;
  json["comm_run"] = model.comm_dir;
  json["training_run"] = train_dir;
  std::vector<std::string> written = {train_dir + "/prediction.json", train_dir + "/prediction.csv"};
  write_file_atomically(written[0], json.dump(2) + "\n");
  write_file_atomically(written[1], prediction_csv(prediction));
  std::filesystem::create_directories(directory.plots_dir());
  for (auto& image : draw_plots({{"prediction", prediction_plot_data(prediction)}}, train, directory.plots_dir())) {
    written.push_back(std::move(image));
  }
  return written;
}

}  // namespace harness
