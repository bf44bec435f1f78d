#include "harness/results/train_report.h"

#include <cmath>
#include <deque>

#include <fmt/format.h>

#include "harness/results/table.h"

namespace harness {
namespace {

using RunColumn = CsvColumn<const Run*>;

// A setting as the CSV shows it (fmt's shortest form: 0.5, true).
template <typename Field>
RunColumn setting(std::string_view name, Field field) {
  return {name, [field](const Run* run) { return fmt::format("{}", field(run->record.settings)); }};
}

// A measured number of an ok run; empty otherwise.
RunColumn measured(std::string_view name, std::function<std::optional<double>(const PointMetrics&)> value) {
  return {name, [value](const Run* run) {
            return csv_number(run->metrics ? value(*run->metrics) : std::nullopt);
          }};
}

// A phase of the point's wall time (record.h's PointTiming); empty when it was not measured.
RunColumn phase(std::string_view name, double PointTiming::*part) {
  return {name, [part](const Run* run) {
            return csv_number(run->record.timing ? std::optional<double>((*run->record.timing).*part)
                                                 : std::nullopt);
          }};
}

const std::vector<RunColumn>& summary_columns() {
  static const std::vector<RunColumn> columns = {
      {"index", [](const Run* run) { return std::to_string(run->record.index); }},
      {"id", [](const Run* run) { return run->record.id; }},
      {"repeat", [](const Run* run) { return std::to_string(run->record.repeat); }},
      {"status", [](const Run* run) { return std::string(status_name(run->record.status)); }},
      setting("workload", [](const PointSettings& s) { return s.workload; }),
      setting("engine", [](const PointSettings& s) { return s.engine; }),
      setting("backend", [](const PointSettings& s) { return s.backend; }),
      setting("build", [](const PointSettings& s) { return s.build; }),
      setting("device", [](const PointSettings& s) { return s.device; }),
      setting("ranks", [](const PointSettings& s) { return s.ranks; }),
      setting("batch_size", [](const PointSettings& s) { return s.batch_size; }),
      // The training samples actually used, once known (dataset_size 0 means "all").
      {"dataset_size",
       [](const Run* run) {
         return std::to_string(run->record.ok() ? run->record.measurements->train->train_samples
                                              : run->record.settings.dataset_size);
       }},
      setting("epochs", [](const PointSettings& s) { return s.epochs; }),
      setting("lr", [](const PointSettings& s) { return s.lr; }),
      setting("seed", [](const PointSettings& s) { return s.seed; }),
      setting("threads_per_rank", [](const PointSettings& s) { return s.threads_per_rank; }),
      setting("bucket_mb", [](const PointSettings& s) { return s.bucket_mb; }),
      setting("overlap", [](const PointSettings& s) { return s.overlap; }),
      measured("time_s", [](const PointMetrics& m) { return m.time_s; }),
      measured("throughput_samples_per_s", [](const PointMetrics& m) { return m.throughput_samples_per_s; }),
      measured("step_time_s", [](const PointMetrics& m) { return m.step_time_s; }),
      measured("compute_time_s", [](const PointMetrics& m) { return m.compute_time_s; }),
      measured("comm_time_s", [](const PointMetrics& m) { return m.comm_time_s; }),
      measured("exposed_comm_time_s", [](const PointMetrics& m) { return m.exposed_comm_time_s; }),
      measured("imbalance_time_s", [](const PointMetrics& m) { return m.imbalance_time_s; }),
      measured("comm_fraction", [](const PointMetrics& m) { return m.comm_fraction; }),
      measured("overlap_fraction", [](const PointMetrics& m) { return m.overlap; }),
      {"speedup", [](const Run* run) {
         return csv_number(run->scaling ? std::optional<double>(run->scaling->speedup) : std::nullopt);
       }},
      {"efficiency", [](const Run* run) {
         return csv_number(run->scaling ? std::optional<double>(run->scaling->efficiency) : std::nullopt);
       }},
      measured("final_loss", [](const PointMetrics& m) { return m.final_loss; }),
      measured("accuracy", [](const PointMetrics& m) { return m.accuracy; }),
      {"wall_time_s", [](const Run* run) { return csv_number(run->record.launch.wall_time_s); }},
      phase("phase_launch_s", &PointTiming::launch_s),
      phase("phase_init_s", &PointTiming::init_s),
      phase("phase_data_s", &PointTiming::data_s),
      phase("phase_train_s", &PointTiming::train_s),
      phase("phase_eval_s", &PointTiming::eval_s),
      phase("phase_finish_s", &PointTiming::finish_s),
      {"oversubscribed", [](const Run* run) { return run_oversubscribed(*run); }},
      {"exchange_path", [](const Run* run) { return run_exchange_path(*run); }},
      {"gpus", [](const Run* run) { return run_gpus(*run); }},
      {"reason", [](const Run* run) { return run->record.reason; }},
  };
  return columns;
}

struct ConfigurationRow {
  const ResultSet* set;
  std::size_t index;
  const ConfigurationStats& stats() const { return set->configurations()[index]; }
  const Run& first_run() const { return set->runs()[static_cast<std::size_t>(stats().runs.front())]; }
};

using ConfigurationColumn = CsvColumn<ConfigurationRow>;

// "_median", "_low", "_high" columns of an interval; empty when absent.
void add_interval(std::vector<ConfigurationColumn>& columns, std::string_view prefix,
                  std::function<std::optional<Interval>(const ConfigurationStats&)> interval) {
  static std::deque<std::string> names;  // the columns keep views of them
  for (const auto& [suffix, part] : {std::pair{"_median", &Interval::median},
                                     std::pair{"_low", &Interval::low},
                                     std::pair{"_high", &Interval::high}}) {
    const std::string_view name = names.emplace_back(std::string(prefix) + suffix);
    columns.push_back({name, [interval, part](const ConfigurationRow& row) {
                         const auto value = interval(row.stats());
                         return csv_number(value ? std::optional<double>((*value).*part) : std::nullopt);
                       }});
  }
}

// A number of a per-configuration comparison with the baseline (convergence, efficiency loss);
// "" when the configuration was not judged (it is its own baseline, or has none).
template <typename Judged>
std::function<std::string(const ConfigurationRow&)> judged_column(
    const std::vector<Judged>& (ResultSet::*per_configuration)() const, double Judged::*field) {
  return [per_configuration, field](const ConfigurationRow& row) {
    const Judged& judged = (row.set->*per_configuration)()[row.index];
    return judged.judged ? csv_number(judged.*field) : std::string();
  };
}

const std::vector<ConfigurationColumn>& stats_columns() {
  static const std::vector<ConfigurationColumn> columns = [] {
    const auto setting_of = [](std::string_view name, auto field) {
      return ConfigurationColumn{name, [field](const ConfigurationRow& row) {
                                   return fmt::format("{}", field(row.stats().settings));
                                 }};
    };
    std::vector<ConfigurationColumn> list = {
        {"configuration", [](const ConfigurationRow& row) { return std::to_string(row.index); }},
        {"first_id", [](const ConfigurationRow& row) { return row.first_run().record.id; }},
        setting_of("workload", [](const PointSettings& s) { return s.workload; }),
        setting_of("engine", [](const PointSettings& s) { return s.engine; }),
        setting_of("backend", [](const PointSettings& s) { return s.backend; }),
        setting_of("build", [](const PointSettings& s) { return s.build; }),
        setting_of("device", [](const PointSettings& s) { return s.device; }),
        setting_of("ranks", [](const PointSettings& s) { return s.ranks; }),
        setting_of("batch_size", [](const PointSettings& s) { return s.batch_size; }),
        {"dataset_size",
         [](const ConfigurationRow& row) {
           const Run& run = row.first_run();
           return std::to_string(run.record.ok() ? run.record.measurements->train->train_samples
                                               : run.record.settings.dataset_size);
         }},
        setting_of("epochs", [](const PointSettings& s) { return s.epochs; }),
        setting_of("lr", [](const PointSettings& s) { return s.lr; }),
        setting_of("overlap", [](const PointSettings& s) { return s.overlap; }),
        {"runs", [](const ConfigurationRow& row) { return std::to_string(row.stats().runs.size()); }},
        {"ok_runs", [](const ConfigurationRow& row) { return std::to_string(row.stats().ok_runs); }},
    };
    const auto when_ok = [](Interval ConfigurationStats::*field) {
      return [field](const ConfigurationStats& s) {
        return s.ok_runs > 0 ? std::optional<Interval>(s.*field) : std::nullopt;
      };
    };
    const auto when_scaled = [](Interval ConfigurationStats::*field) {
      return [field](const ConfigurationStats& s) {
        return s.baseline >= 0 ? std::optional<Interval>(s.*field) : std::nullopt;
      };
    };
    add_interval(list, "time_s", when_ok(&ConfigurationStats::time_s));
    add_interval(list, "throughput", when_ok(&ConfigurationStats::throughput));
    add_interval(list, "speedup", when_scaled(&ConfigurationStats::speedup));
    add_interval(list, "efficiency", when_scaled(&ConfigurationStats::efficiency));
    list.push_back({"karp_flatt", [](const ConfigurationRow& row) { return csv_number(row.stats().karp_flatt); }});
    list.push_back({"baseline_id", [](const ConfigurationRow& row) {
                      const int baseline = row.stats().baseline;
                      return baseline < 0 ? std::string()
                                          : ConfigurationRow{row.set, static_cast<std::size_t>(baseline)}
                                                .first_run()
                                                .record.id;
                    }});
    // Convergence against the baseline (results/convergence.h): "" when there is none to compare with.
    list.push_back({"final_loss_median", judged_column(&ResultSet::convergence, &ConvergenceCheck::final_loss)});
    list.push_back({"accuracy_median", judged_column(&ResultSet::convergence, &ConvergenceCheck::accuracy)});
    list.push_back({"baseline_final_loss", judged_column(&ResultSet::convergence, &ConvergenceCheck::baseline_loss)});
    list.push_back(
        {"baseline_accuracy", judged_column(&ResultSet::convergence, &ConvergenceCheck::baseline_accuracy)});
    list.push_back({"loss_band", judged_column(&ResultSet::convergence, &ConvergenceCheck::loss_band)});
    list.push_back({"accuracy_band", judged_column(&ResultSet::convergence, &ConvergenceCheck::accuracy_band)});
    list.push_back({"convergence", [](const ConfigurationRow& row) { return row.set->convergence()[row.index].verdict(); }});
    // Where the efficiency went (results/efficiency_loss.h): fractions that add up to 1 − efficiency.
    list.push_back({"efficiency_lost", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::lost)});
    list.push_back({"lost_compute", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::compute)});
    list.push_back(
        {"lost_communication", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::communication)});
    list.push_back({"lost_waiting", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::waiting)});
    list.push_back({"lost_rest", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::rest)});
    // Who holds the others up (results/stragglers.h): "" where no run says (one training rank,
    // records before version 8).
    const auto straggler = [](std::function<std::string(const Stragglers&)> format) {
      return [format](const ConfigurationRow& row) {
        const Stragglers& stragglers = row.set->stragglers()[row.index];
        return stragglers.measured ? format(stragglers) : std::string();
      };
    };
    list.push_back({"straggler_rank", straggler([](const Stragglers& s) { return std::to_string(s.straggler.rank); })});
    list.push_back({"straggler_host", straggler([](const Stragglers& s) { return s.straggler.host; })});
    list.push_back({"straggler_share", straggler([](const Stragglers& s) { return csv_number(s.straggler.share); })});
    list.push_back(
        {"straggler_lead_ms", straggler([](const Stragglers& s) { return csv_number(1e3 * s.straggler.lead_median_s); })});
    list.push_back(
        {"straggler_lead_p95_ms", straggler([](const Stragglers& s) { return csv_number(1e3 * s.straggler.lead_p95_s); })});
    list.push_back({"straggler_wait_ms",
                    straggler([](const Stragglers& s) { return csv_number(1e3 * s.straggler.wait_per_step_s); })});
    list.push_back({"straggler_flag", straggler([](const Stragglers& s) { return s.flagged; })});
    return list;
  }();
  return columns;
}

std::vector<const Run*> run_rows(const ResultSet& set) {
  std::vector<const Run*> rows;
  for (const auto& run : set.runs()) rows.push_back(&run);
  return rows;
}

std::vector<ConfigurationRow> configuration_rows(const ResultSet& set) {
  std::vector<ConfigurationRow> rows;
  for (std::size_t c = 0; c < set.configurations().size(); ++c) rows.push_back({&set, c});
  return rows;
}

// "iris_mlp", or "iris_mlp/blas" for a workload on its non-default engine.
std::string workload_label(const PointSettings& settings) {
  return settings.engine == "torch" ? settings.workload : settings.workload + "/" + settings.engine;
}

// The console tables' first columns for a configuration: which one it is (its build too, when the
// experiment names builds).
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
  return columns;
}

}  // namespace

int64_t batch_per_training_rank(const PointSettings& settings) {
  return per_rank_batch(settings, worker_layout(settings, 0, settings.ranks).workers);
}

std::string TrainReport::failure(const Measurements& /*measurements*/) const { return ""; }

std::string TrainReport::remark(const Measurements& measurements) const {
  // Kept as a result (its timings are real) but said, so that a diverged study is not mistaken
  // for a good one.
  const auto& epochs = measurements.train->epochs;
  if (!epochs.empty() && std::isnan(epochs.back().train_loss)) {
    return "the loss is not a finite number: training diverged, try a lower lr";
  }
  return "";
}

std::map<std::string, std::string> TrainReport::tables(const ResultSet& set) const {
  if (set.experiment().builds.empty()) {
    return {{"summary.csv", format_csv(without_column(summary_columns(), "build"), run_rows(set))},
            {"stats.csv", format_csv(without_column(stats_columns(), "build"), configuration_rows(set))}};
  }
  return {{"summary.csv", format_csv(summary_columns(), run_rows(set))},
          {"stats.csv", format_csv(stats_columns(), configuration_rows(set))}};
}

std::string TrainReport::console_table(const ResultSet& set) const {
  // With repeats, one line per configuration (medians and intervals) reads better than one per
  // run; summary.csv keeps every run.
  std::string table = set.experiment().repeats > 1 ? configurations_table(set) : runs_table(set);
  return table + efficiency_loss_table(set) + straggler_table(set) + convergence_lines(set);
}

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
      {"flag", "", 9, false, of([](const Stragglers& s) { return s.flagged.empty() ? std::string("-") : "STRAGGLER"; })},
  });
  return "\nthe slowest rank (most often the slowest in compute; lead: its compute minus the median rank's when it "
         "was; wait: what the others waited for it per step):\n" +
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
    lines += fmt::format("straggler: {} {}: {} (noise floor {:.3g} ms)\n", row.first_run().record.id,
                         describe_point(described, point), describe_straggling(*flagged),
                         1e3 * stragglers.noise_floor_s);
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
  return format_console_table(columns, run_rows(set));
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
  return format_console_table(columns, configuration_rows(set));
}

}  // namespace harness
