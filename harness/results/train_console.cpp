// The training console: the per-run and per-configuration tables, and the explanations below
// them (where the efficiency went, the slowest rank, convergence against the baseline).
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "harness/results/statistics.h"
#include "harness/results/table.h"
#include "harness/results/train_report.h"
#include "harness/results/train_rows.h"
#include "schemes/registry.h"

namespace harness {
namespace {

// Whether any run trained with another scheme than sync: then the tables name each one's.
bool schemes_vary(const ResultSet& set) {
  return std::any_of(set.runs().begin(), set.runs().end(),
                     [](const Run& run) { return run.record.settings.scheme != kDefaultScheme; });
}

// Whether any run has a target: then the tables show the time to reach it.
bool has_targets(const ResultSet& set) {
  return std::any_of(set.runs().begin(), set.runs().end(),
                     [](const Run& run) { return run.record.settings.target.has_value(); });
}

// The console tables' first columns for a configuration: which one it is (its build too, when the
// experiment names builds, and its scheme when they vary).
std::vector<ConsoleColumn<ConfigurationRow>> configuration_identity_columns(const ResultSet& set) {
  std::vector<ConsoleColumn<ConfigurationRow>> columns{
      {"first id", "", 13, true, [](const ConfigurationRow& row) { return row.first_run().record.id; }},
      {"workload", "", 14, false, [](const ConfigurationRow& row) { return workload_label(row.stats().settings); }},
      {"backend", "", 10, false, [](const ConfigurationRow& row) { return row.stats().settings.backend; }},
      {"ranks", "", 5, false, [](const ConfigurationRow& row) { return std::to_string(row.stats().settings.ranks); }},
      {"batch", "/rank", 6, false,
       [](const ConfigurationRow& row) { return std::to_string(batch_per_training_rank(row.stats().settings)); }},
  };
  if (!set.experiment().builds.empty()) {
    columns.insert(columns.begin() + 3, {"build", "", 6, false,
                                         [](const ConfigurationRow& row) { return row.stats().settings.build; }});
  }
  if (schemes_vary(set)) {
    columns.push_back(
        {"scheme", "", 15, false, [](const ConfigurationRow& row) { return scheme_label(row.stats().settings); }});
  }
  return columns;
}

}  // namespace

std::string straggler_table(const ResultSet& set) {
  std::vector<ConfigurationRow> rows;
  for (const auto& row : configuration_rows(set)) {
    if (set.stragglers()[row.index].measured) rows.push_back(row);
  }
  if (rows.empty()) return "";
  using Column = ConsoleColumn<ConfigurationRow>;
  const auto of = [](std::function<std::string(const Stragglers&)> format) {
    return [format](const ConfigurationRow& row) { return format(row.set->stragglers()[row.index]); };
  };
  std::vector<Column> columns = configuration_identity_columns(set);
  columns.insert(columns.end(), {
      {"slowest", "rank", 7, false, of([](const Stragglers& s) { return std::to_string(s.straggler.rank); })},
      {"host", "", 12, false, of([](const Stragglers& s) { return s.straggler.host; })},
      {"share", "% steps", 7, false, of([](const Stragglers& s) { return fmt::format("{:.0f}", 100 * s.straggler.share); })},
      {"lead", "ms", 8, false, of([](const Stragglers& s) { return fmt::format("{:.3f}", 1e3 * s.straggler.lead_median_s); })},
      {"lead p95", "ms", 8, false, of([](const Stragglers& s) { return fmt::format("{:.3f}", 1e3 * s.straggler.lead_p95_s); })},
      {"wait", "ms/step", 8, false,
       of([](const Stragglers& s) { return fmt::format("{:.3f}", 1e3 * s.straggler.wait_per_step_s); })},
      // A flagged host need not be the slowest rank's (the line below names it).
      {"flag", "", 9, false, of([](const Stragglers& s) {
         return s.flagged.empty() ? std::string("-") : s.flagged == "host" ? "HOST" : "STRAGGLER";
       })},
  });
  return "\nthe slowest rank (most often the slowest in compute; lead: its compute minus the others' median when it "
         "was; wait: the training ranks' mean wait for it per step):\n" +
         format_console_table(columns, rows) + straggler_lines(set);
}

std::string straggler_lines(const ResultSet& set) {
  std::string lines;
  for (std::size_t c = 0; c < set.configurations().size(); ++c) {
    const Stragglers& stragglers = set.stragglers()[c];
    const Straggling* flagged = stragglers.flagged_entry();
    if (flagged == nullptr) continue;
    const ConfigurationRow row{&set, c};
    Point point;
    point.settings = row.stats().settings;
    Experiment described = set.experiment();
    described.repeats = 1;
    lines += fmt::format("straggler: {} {}: {}; {}\n", row.first_run().record.id, describe_point(described, point),
                         describe_straggling(*flagged), describe_flag(stragglers));
  }
  return lines;
}

std::string efficiency_loss_table(const ResultSet& set) {
  std::vector<ConfigurationRow> rows;
  for (const auto& row : configuration_rows(set)) {
    if (set.efficiency_losses()[row.index].judged) rows.push_back(row);
  }
  if (rows.empty()) return "";
  using Column = ConsoleColumn<ConfigurationRow>;
  const auto points = [](double EfficiencyLoss::*field) {
    return [field](const ConfigurationRow& row) {
      return fmt::format("{:.1f}", 100 * (row.set->efficiency_losses()[row.index].*field));
    };
  };
  std::vector<Column> columns = configuration_identity_columns(set);
  columns.insert(columns.end(), {
      {"lost", "points", 7, false, points(&EfficiencyLoss::lost)},
      {"compute", "inflation", 9, false, points(&EfficiencyLoss::compute)},
      {"comm", "exposed", 8, false, points(&EfficiencyLoss::communication)},
      {"waiting", "slowest", 8, false, points(&EfficiencyLoss::waiting)},
      {"rest", "", 6, false, points(&EfficiencyLoss::rest)},
      // Ranks that outnumber their cores inflate compute by waiting for one: say so beside it.
      {"why", "", 0, true, [](const ConfigurationRow& row) {
         const std::string oversubscribed = run_oversubscribed(row.first_run());
         return oversubscribed.empty() ? std::string() : "oversubscribed: " + oversubscribed;
       }},
  });
  return "\nwhere the efficiency went (percentage points lost against the baseline; the parts add up):\n" +
         format_console_table(columns, rows);
}

std::string convergence_lines(const ResultSet& set) {
  std::string lines;
  for (std::size_t c = 0; c < set.configurations().size(); ++c) {
    const ConvergenceCheck& check = set.convergence()[c];
    if (!check.worse()) continue;
    const ConfigurationRow row{&set, c};
    const ConfigurationRow baseline{&set, static_cast<std::size_t>(row.stats().baseline)};
    const std::string speed =
        row.stats().ok_runs > 0 && row.stats().speedup.median > 0
            ? fmt::format(" at {:.2f}x its speed", row.stats().speedup.median)
            : "";
    Point point;
    point.settings = row.stats().settings;
    Experiment described = set.experiment();
    described.repeats = 1;
    lines += fmt::format(
        "convergence: {} {}: {}; final loss {:.4g} against {:.4g} (band {:.2g}), accuracy {:.1f}% against "
        "{:.1f}% (band {:.1f} points), baseline {}{}\n",
        row.first_run().record.id, describe_point(described, point), check.verdict(),
        check.final_loss, check.baseline_loss, check.loss_band, 100 * check.accuracy, 100 * check.baseline_accuracy,
        100 * check.accuracy_band, baseline.first_run().record.id, speed);
  }
  return lines.empty() ? "" : "\n" + lines;
}

std::string pipeline_table(const ResultSet& set) {
  std::vector<ConfigurationRow> rows;
  for (const auto& row : configuration_rows(set)) {
    if (!run_values(row, [](const PointMetrics& m) { return m.pipeline_bubble; }).empty()) rows.push_back(row);
  }
  if (rows.empty()) return "";
  using Column = ConsoleColumn<ConfigurationRow>;
  const auto median = [](std::optional<double> PointMetrics::*field, double scale, int digits) {
    return [field, scale, digits](const ConfigurationRow& row) {
      const auto values = run_values(row, [field](const PointMetrics& m) { return m.*field; });
      return values.empty() ? std::string("-") : fmt::format("{:.{}f}", scale * median_of(values), digits);
    };
  };
  std::vector<Column> columns = configuration_identity_columns(set);
  columns.insert(columns.end(), {
      {"compute", "% step", 7, false, median(&PointMetrics::pipeline_compute_share, 100, 0)},
      {"bubble", "% step", 7, false, median(&PointMetrics::pipeline_bubble_share, 100, 0)},
      {"imbalance", "% step", 9, false, median(&PointMetrics::pipeline_imbalance_share, 100, 0)},
      {"transfer", "% step", 8, false, median(&PointMetrics::pipeline_transfer_share, 100, 0)},
      {"idle", "% measured", 10, false, median(&PointMetrics::pipeline_bubble, 100, 1)},
      {"idle", "% replayed", 10, false, median(&PointMetrics::pipeline_bubble_replayed, 100, 1)},
      {"idle", "% (p-1)/(m+p-1)", 15, false, median(&PointMetrics::pipeline_bubble_predicted, 100, 1)},
      {"peak act", "MB", 8, false, median(&PointMetrics::peak_activation_mb, 1, 1)},
  });
  return "\nwhere a pipeline step went (the stages' mean step: their mean compute, the bubble of balanced stages, what "
         "their imbalance adds, transfers and averaging; idle: the stages' idle share, measured, with their passes "
         "replayed and free transfers, and for balanced stages):\n" +
         format_console_table(columns, rows);
}

std::string runs_table(const ResultSet& set) {
  using Column = ConsoleColumn<const Run*>;
  const auto ok = [](const std::function<std::string(const Run&)>& format) {
    return [format](const Run* run) { return run->metrics ? format(*run) : std::string("-"); };
  };
  const auto scaled = [](const std::function<std::string(const Scaling&)>& format) {
    return [format](const Run* run) { return run->scaling ? format(*run->scaling) : std::string("-"); };
  };
  std::vector<Column> columns = {
      {"id", "", 13, true, [](const Run* run) { return run->record.id; }},
      {"workload", "", 14, false, [](const Run* run) { return workload_label(run->record.settings); }},
      {"backend", "", 10, false, [](const Run* run) { return run->record.settings.backend; }},
      {"ranks", "", 5, false, [](const Run* run) { return std::to_string(run->record.settings.ranks); }},
      {"batch", "/rank", 6, false,
       [](const Run* run) { return std::to_string(batch_per_training_rank(run->record.settings)); }},
      {"status", "", 7, false,
       [](const Run* run) {
         if (run->metrics) return std::string("ok");
         return std::string(run->record.ok() ? "failed" : status_name(run->record.status));
       }},
      {"time", "s", 8, false, ok([](const Run& r) { return fmt::format("{:.2f}", r.metrics->time_s); })},
      {"throughput", "samples/s", 10, false,
       ok([](const Run& r) { return fmt::format("{:.0f}", r.metrics->throughput_samples_per_s); })},
      {"step", "ms", 9, false, ok([](const Run& r) { return fmt::format("{:.3f}", 1e3 * r.metrics->step_time_s); })},
      {"comm", "% step", 7, false,
       ok([](const Run& r) { return fmt::format("{:.1f}", 100 * r.metrics->comm_fraction); })},
      {"hidden", "%", 7, false, ok([](const Run& r) { return fmt::format("{:.0f}", 100 * r.metrics->overlap); })},
      {"speedup", "x", 7, false, scaled([](const Scaling& s) { return fmt::format("{:.2f}", s.speedup); })},
      {"effic", "%", 6, false, scaled([](const Scaling& s) { return fmt::format("{:.0f}", 100 * s.efficiency); })},
      {"loss", "", 8, false, ok([](const Run& r) { return fmt::format("{:.4f}", r.metrics->final_loss); })},
      {"acc", "%", 6, false, ok([](const Run& r) { return fmt::format("{:.1f}", 100 * r.metrics->accuracy); })},
  };
  if (!set.experiment().builds.empty()) {
    columns.insert(columns.begin() + 3, {"build", "", 6, false, [](const Run* run) { return run->record.settings.build; }});
  }
  if (schemes_vary(set)) {
    columns.insert(columns.begin() + 5,
                   {"scheme", "", 15, false, [](const Run* run) { return scheme_label(run->record.settings); }});
  }
  // Time to accuracy, where a point has a target: "-" where it was not reached (or the run failed).
  const auto runs = run_rows(set);
  if (has_targets(set)) {
    columns.push_back({"to target", "s", 9, false, [](const Run* run) {
                         const bool reached = run->metrics && run->metrics->time_to_target_s;
                         return reached ? fmt::format("{:.2f}", *run->metrics->time_to_target_s) : std::string("-");
                       }});
  }
  return format_console_table(columns, runs);
}

std::string configurations_table(const ResultSet& set) {
  using Column = ConsoleColumn<ConfigurationRow>;
  const auto interval = [](const Interval& value, double scale, int digits) {
    return fmt::format("{:.{}f} [{:.{}f}-{:.{}f}]", scale * value.median, digits, scale * value.low,
                       digits, scale * value.high, digits);
  };
  std::vector<Column> columns = configuration_identity_columns(set);
  columns.insert(columns.end(), {
      {"ok", "runs", 5, false,
       [](const ConfigurationRow& row) { return fmt::format("{}/{}", row.stats().ok_runs, row.stats().runs.size()); }},
      {"throughput", "samples/s [95% CI]", 26, false,
       [interval](const ConfigurationRow& row) {
         return row.stats().ok_runs > 0 ? interval(row.stats().throughput, 1, 0) : std::string("-");
       }},
      {"speedup", "x [95% CI]", 20, false,
       [interval](const ConfigurationRow& row) {
         return row.stats().baseline >= 0 ? interval(row.stats().speedup, 1, 2) : std::string("-");
       }},
      {"efficiency", "% [95% CI]", 16, false,
       [interval](const ConfigurationRow& row) {
         return row.stats().baseline >= 0 ? interval(row.stats().efficiency, 100, 0) : std::string("-");
       }},
  });
  if (has_targets(set)) {
    // The median over the runs that reached the target, its interval, and how many of them did.
    columns.push_back({"to target", "s [95% CI] reached", 28, false, [interval](const ConfigurationRow& row) {
                         const auto times =
                             run_values(row, [](const PointMetrics& m) { return m.time_to_target_s; });
                         const std::size_t ran =
                             run_values(row, [](const PointMetrics&) { return std::optional<double>(0); }).size();
                         if (times.empty()) return ran == 0 ? std::string("-") : fmt::format("- 0/{}", ran);
                         return fmt::format("{} {}/{}", interval(bootstrap_median(times), 1, 2), times.size(), ran);
                       }});
  }
  return format_console_table(columns, configuration_rows(set));
}

}  // namespace harness
