#include "harness/results/train_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "harness/results/plot_data.h"
#include "harness/results/statistics.h"
#include "harness/results/table.h"
#include "harness/results/train_rows.h"
#include "schemes/registry.h"

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

// The training samples a run used: measured, or for a run that failed the setting where it names a
// number; "" where it is 0 ("all": how many that is, only a run that read the data knows).
std::string dataset_size_used(const Run& run) {
  if (run.record.ok()) return std::to_string(run.record.measurements->train->train_samples);
  return run.record.settings.dataset_size > 0 ? std::to_string(run.record.settings.dataset_size) : "";
}

// A configuration's: from a run that succeeded, where one did.
std::string dataset_size_used(const ConfigurationRow& row) {
  for (const int r : row.stats().runs) {
    const Run& run = row.set->runs()[static_cast<std::size_t>(r)];
    if (run.record.ok()) return dataset_size_used(run);
  }
  return dataset_size_used(row.first_run());
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
      {"dataset_size", [](const Run* run) { return dataset_size_used(*run); }},
      setting("epochs", [](const PointSettings& s) { return s.epochs; }),
      setting("lr", [](const PointSettings& s) { return s.lr; }),
      setting("seed", [](const PointSettings& s) { return s.seed; }),
      setting("threads_per_rank", [](const PointSettings& s) { return s.threads_per_rank; }),
      setting("bucket_mb", [](const PointSettings& s) { return s.bucket_mb; }),
      setting("overlap", [](const PointSettings& s) { return s.overlap; }),
      setting("scheme", [](const PointSettings& s) { return s.scheme; }),
      setting("sync_every", [](const PointSettings& s) { return sync_every(s); }),
      setting("max_staleness", [](const PointSettings& s) { return staleness_text(s); }),
      setting("pipeline_stages", [](const PointSettings& s) { return pipeline_stages(s); }),
      setting("micro_batches", [](const PointSettings& s) { return micro_batches(s); }),
      setting("pipeline_schedule", [](const PointSettings& s) { return pipeline_schedule(s); }),
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
      {"target_reached", [](const Run* run) {
         if (!run->metrics || !run->metrics->target_reached) return std::string();
         return std::string(*run->metrics->target_reached ? "true" : "false");
       }},
      measured("time_to_target_s", [](const PointMetrics& m) { return m.time_to_target_s; }),
      measured("wait_time_s", [](const PointMetrics& m) { return m.wait_time_s; }),
      measured("staleness_median", [](const PointMetrics& m) { return m.staleness_median; }),
      measured("staleness_p95", [](const PointMetrics& m) { return m.staleness_p95; }),
      measured("staleness_max", [](const PointMetrics& m) { return m.staleness_max; }),
      measured("server_busy_fraction", [](const PointMetrics& m) { return m.server_busy_fraction; }),
      measured("pipeline_bubble", [](const PointMetrics& m) { return m.pipeline_bubble; }),
      measured("pipeline_bubble_predicted", [](const PointMetrics& m) { return m.pipeline_bubble_predicted; }),
      measured("pipeline_bubble_replayed", [](const PointMetrics& m) { return m.pipeline_bubble_replayed; }),
      measured("stage_imbalance", [](const PointMetrics& m) { return m.stage_imbalance; }),
      measured("peak_activation_mb", [](const PointMetrics& m) { return m.peak_activation_mb; }),
      measured("pipeline_compute_share", [](const PointMetrics& m) { return m.pipeline_compute_share; }),
      measured("pipeline_bubble_share", [](const PointMetrics& m) { return m.pipeline_bubble_share; }),
      measured("pipeline_imbalance_share", [](const PointMetrics& m) { return m.pipeline_imbalance_share; }),
      measured("pipeline_transfer_share", [](const PointMetrics& m) { return m.pipeline_transfer_share; }),
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

// "seed=2 threads_per_rank=4": the settings that differ between the set's configurations and
// have no column of their own, so that two rows never read alike.
std::string other_settings(const ConfigurationRow& row) {
  static const std::set<std::string, std::less<>> own_columns = {
      "workload", "engine", "backend", "build", "device",  "ranks",
      "batch_size", "dataset_size", "epochs", "lr", "overlap", "scheme", "sync_every"};
  std::vector<std::string> keys;
  for (const std::string& key : row.set->varying_keys()) {
    if (!own_columns.count(key)) keys.push_back(key);
  }
  return keys.empty() ? "" : curve_label(row.stats().settings, keys, false);
}

// The configuration and the settings that tell it apart.
std::vector<ConfigurationColumn> configuration_columns() {
  const auto setting_of = [](std::string_view name, auto field) {
    return ConfigurationColumn{name, [field](const ConfigurationRow& row) {
                                 return fmt::format("{}", field(row.stats().settings));
                               }};
  };
  return {
      {"configuration", [](const ConfigurationRow& row) { return std::to_string(row.index); }},
      {"first_id", [](const ConfigurationRow& row) { return row.first_run().record.id; }},
      setting_of("workload", [](const PointSettings& s) { return s.workload; }),
      setting_of("engine", [](const PointSettings& s) { return s.engine; }),
      setting_of("backend", [](const PointSettings& s) { return s.backend; }),
      setting_of("build", [](const PointSettings& s) { return s.build; }),
      setting_of("device", [](const PointSettings& s) { return s.device; }),
      setting_of("ranks", [](const PointSettings& s) { return s.ranks; }),
      setting_of("batch_size", [](const PointSettings& s) { return s.batch_size; }),
      {"dataset_size", [](const ConfigurationRow& row) { return dataset_size_used(row); }},
      setting_of("epochs", [](const PointSettings& s) { return s.epochs; }),
      setting_of("lr", [](const PointSettings& s) { return s.lr; }),
      setting_of("overlap", [](const PointSettings& s) { return s.overlap; }),
      setting_of("scheme", [](const PointSettings& s) { return s.scheme; }),
      setting_of("sync_every", [](const PointSettings& s) { return sync_every(s); }),
      setting_of("max_staleness", [](const PointSettings& s) { return staleness_text(s); }),
      {"other_settings", other_settings},
      {"runs", [](const ConfigurationRow& row) { return std::to_string(row.stats().runs.size()); }},
      {"ok_runs", [](const ConfigurationRow& row) { return std::to_string(row.stats().ok_runs); }},
  };
}

// Time, throughput, speedup and efficiency with their intervals, and the baseline they scale from.
void add_scaling_columns(std::vector<ConfigurationColumn>& list) {
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
}

// Convergence against the baseline (results/convergence.h): "" when there is none to compare with.
void add_convergence_columns(std::vector<ConfigurationColumn>& list) {
  // A configuration's own medians, judged or not (the baseline's too).
  const auto own = [](double ConvergenceCheck::*field) {
    return [field](const ConfigurationRow& row) {
      const ConvergenceCheck& check = row.set->convergence()[row.index];
      return check.measured ? csv_number(check.*field) : std::string();
    };
  };
  list.push_back({"final_loss_median", own(&ConvergenceCheck::final_loss)});
  list.push_back({"accuracy_median", own(&ConvergenceCheck::accuracy)});
  list.push_back({"baseline_final_loss", judged_column(&ResultSet::convergence, &ConvergenceCheck::baseline_loss)});
  list.push_back({"baseline_accuracy", judged_column(&ResultSet::convergence, &ConvergenceCheck::baseline_accuracy)});
  list.push_back({"loss_band", judged_column(&ResultSet::convergence, &ConvergenceCheck::loss_band)});
  list.push_back({"accuracy_band", judged_column(&ResultSet::convergence, &ConvergenceCheck::accuracy_band)});
  list.push_back({"convergence", [](const ConfigurationRow& row) { return row.set->convergence()[row.index].verdict(); }});
}

// Time to accuracy (results/README.md): the runs that reached the target of those that ran, and
// the median time of those that did, with its bootstrap interval; the schemes' own measures,
// medians over the runs.
void add_scheme_columns(std::vector<ConfigurationColumn>& list) {
  list.push_back({"target_reached", [](const ConfigurationRow& row) {
                    const auto reached = run_values(row, [](const PointMetrics& m) {
                      return m.target_reached ? std::optional<double>(*m.target_reached ? 1 : 0) : std::nullopt;
                    });
                    if (reached.empty()) return std::string();
                    return fmt::format("{}/{}", std::count(reached.begin(), reached.end(), 1.0), reached.size());
                  }});
  static const std::array<std::pair<std::string_view, double Interval::*>, 3> parts = {
      std::pair{"time_to_target_s_median", &Interval::median}, std::pair{"time_to_target_s_low", &Interval::low},
      std::pair{"time_to_target_s_high", &Interval::high}};
  for (const auto& [name, part] : parts) {
    list.push_back({name, [part](const ConfigurationRow& row) {
                      const auto times = run_values(row, [](const PointMetrics& m) { return m.time_to_target_s; });
                      return times.empty() ? std::string() : csv_number(bootstrap_median(times).*part);
                    }});
  }
  const auto median_column = [&list](std::string_view name, std::optional<double> PointMetrics::*field) {
    list.push_back({name, [field](const ConfigurationRow& row) {
                      const auto values = run_values(row, [field](const PointMetrics& m) { return m.*field; });
                      return values.empty() ? std::string() : csv_number(median_of(values));
                    }});
  };
  median_column("wait_time_s", &PointMetrics::wait_time_s);
  median_column("staleness_median", &PointMetrics::staleness_median);
  median_column("staleness_p95", &PointMetrics::staleness_p95);
  median_column("staleness_max", &PointMetrics::staleness_max);
  median_column("server_busy_fraction", &PointMetrics::server_busy_fraction);
  median_column("pipeline_bubble", &PointMetrics::pipeline_bubble);
  median_column("pipeline_bubble_predicted", &PointMetrics::pipeline_bubble_predicted);
  median_column("pipeline_bubble_replayed", &PointMetrics::pipeline_bubble_replayed);
  median_column("stage_imbalance", &PointMetrics::stage_imbalance);
  median_column("peak_activation_mb", &PointMetrics::peak_activation_mb);
  median_column("pipeline_compute_share", &PointMetrics::pipeline_compute_share);
  median_column("pipeline_bubble_share", &PointMetrics::pipeline_bubble_share);
  median_column("pipeline_imbalance_share", &PointMetrics::pipeline_imbalance_share);
  median_column("pipeline_transfer_share", &PointMetrics::pipeline_transfer_share);
}

// Where the efficiency went (results/efficiency_loss.h): fractions that add up to 1 − efficiency.
void add_efficiency_loss_columns(std::vector<ConfigurationColumn>& list) {
  list.push_back({"efficiency_lost", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::lost)});
  list.push_back({"lost_compute", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::compute)});
  list.push_back({"lost_communication", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::communication)});
  list.push_back({"lost_waiting", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::waiting)});
  list.push_back({"lost_rest", judged_column(&ResultSet::efficiency_losses, &EfficiencyLoss::rest)});
}

// Who holds the others up (results/stragglers.h): the flagged rank or host; "" where nothing is
// flagged (and where no run says: one training rank, records before version 8).
void add_straggler_columns(std::vector<ConfigurationColumn>& list) {
  const auto flagged = [](std::function<std::string(const Stragglers&, const Straggling&)> format) {
    return [format](const ConfigurationRow& row) {
      const Stragglers& stragglers = row.set->stragglers()[row.index];
      const Straggling* entry = stragglers.flagged_entry();
      return entry != nullptr ? format(stragglers, *entry) : std::string();
    };
  };
  list.push_back({"straggler_rank", flagged([](const Stragglers&, const Straggling& e) {
                    return e.rank >= 0 ? std::to_string(e.rank) : std::string();
                  })});
  list.push_back({"straggler_host", flagged([](const Stragglers&, const Straggling& e) { return e.host; })});
  list.push_back(
      {"straggler_share", flagged([](const Stragglers&, const Straggling& e) { return csv_number(e.share); })});
  list.push_back(
      {"straggler_chance", flagged([](const Stragglers&, const Straggling& e) { return csv_number(e.chance); })});
  list.push_back({"straggler_lead_ms",
                  flagged([](const Stragglers&, const Straggling& e) { return csv_number(1e3 * e.lead_median_s); })});
  list.push_back({"straggler_lead_p95_ms",
                  flagged([](const Stragglers&, const Straggling& e) { return csv_number(1e3 * e.lead_p95_s); })});
  list.push_back({"straggler_wait_ms",
                  flagged([](const Stragglers&, const Straggling& e) { return csv_number(1e3 * e.wait_per_step_s); })});
  list.push_back({"straggler_excess_ms",
                  flagged([](const Stragglers&, const Straggling& e) { return csv_number(1e3 * e.excess_s); })});
  list.push_back(
      {"straggler_p", flagged([](const Stragglers&, const Straggling& e) { return csv_number(e.p_value); })});
  list.push_back({"straggler_flag", flagged([](const Stragglers& s, const Straggling&) { return s.flagged; })});
}

const std::vector<ConfigurationColumn>& stats_columns() {
  static const std::vector<ConfigurationColumn> columns = [] {
    std::vector<ConfigurationColumn> list = configuration_columns();
    add_scaling_columns(list);
    add_convergence_columns(list);
    add_scheme_columns(list);
    add_efficiency_loss_columns(list);
    add_straggler_columns(list);
    return list;
  }();
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
  return table + efficiency_loss_table(set) + pipeline_table(set) + straggler_table(set) + convergence_lines(set);
}

}  // namespace harness
