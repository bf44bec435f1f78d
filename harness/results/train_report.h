// The reports of training points (kind "train"): summary.csv (a row per run), stats.csv (a row per
// configuration), the console tables and the training plots (speedup, efficiency, throughput,
// Karp-Flatt, loss and accuracy, the step breakdown, compute time by rank) and the straggler
// table and flag.
#pragma once

#include "harness/results/report.h"

namespace harness {

class TrainReport final : public KindReport {
 public:
  std::string failure(const Measurements& measurements) const override;
  std::string remark(const Measurements& measurements) const override;
  std::map<std::string, std::string> tables(const ResultSet& set) const override;
  std::string console_table(const ResultSet& set) const override;
  std::map<std::string, std::string> plot_data(const ResultSet& set) const override;
};

// The per-run console table (one line per run), and the per-configuration one (medians with
// intervals), which the console shows when points repeat.
std::string runs_table(const ResultSet& set);
std::string configurations_table(const ResultSet& set);
// A line per configuration whose final loss or accuracy is worse than its baseline's beyond the
// band (results/convergence.h), or "" when none is: what the console adds below the table.
std::string convergence_lines(const ResultSet& set);
// Per configuration with a baseline other than itself: its lost efficiency in parts
// (results/efficiency_loss.h), as percentage points; "" when there is none.
std::string efficiency_loss_table(const ResultSet& set);

// Per configuration with two training ranks or more: its slowest rank, host, share, lead and
// wait (results/stragglers.h), then straggler_lines; "" when no configuration says.
std::string straggler_table(const ResultSet& set);
// A line per configuration flagged for a straggler ("straggler: <id> <point>: rank 2 (nodeb) was
// the slowest in 97% of the steps, ..."), or "" when none is.
std::string straggler_lines(const ResultSet& set);

// Per configuration of scheme pipeline: where its stages' step went (compute, the bubble, the
// stages' imbalance, transfers and averaging), the measured bubble against (p - 1)/(m + p - 1),
// and the largest stage's peak activation memory; "" when no run pipelines.
std::string pipeline_table(const ResultSet& set);

// The tables' "batch /rank" column: batch_size under weak scaling, its share under strong scaling.
int64_t batch_per_training_rank(const PointSettings& settings);

}  // namespace harness
