// What a results directory holds about an experiment's points, loaded once: each point's record
// (found by its PointKey, so records written by an older harness or at another position in the
// sweep are found too), the metrics of each run, the configurations with their baselines and
// intervals. Every report (console table, summary.csv, stats.csv, plots) reads this, and nothing
// recomputes it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/results/convergence.h"
#include "harness/results/efficiency_loss.h"
#include "harness/results/metrics.h"
#include "harness/results/record.h"
#include "harness/results/results_directory.h"
#include "harness/results/scaling.h"
#include "harness/results/stragglers.h"
#include "harness/study/sweep.h"

namespace harness {

// One record of one of the experiment's points, with what is derived from it.
struct Run {
  PointRecord record;
  std::string path;                     // its file
  std::optional<PointMetrics> metrics;  // an ok training point
  std::optional<Scaling> scaling;       // against its configuration's baseline
  int configuration = -1;               // index into ResultSet::configurations() (training)
};

// What a run's measurements say of how its buffers reached the backend, and of its GPUs
// (describe_gpus); "" where they say nothing (a failed point, a CPU point, an older record).
std::string run_exchange_path(const Run& run);
std::string run_gpus(const Run& run);
// "4 ranks × 1 thread on 2 cores" where the run's ranks outnumbered their cores, else "".
std::string run_oversubscribed(const Run& run);

class ResultSet {
 public:
  // Reads the records of `points` in `directory`. A file in points/ that is not a readable record
  // is refused when `refuse_unreadable` (Error naming it: a summary without it would move the
  // baselines silently), otherwise left out. A point without a record is left out.
  static ResultSet load(const ResultsDirectory& directory, const Experiment& experiment,
                        const std::vector<Point>& points, bool refuse_unreadable);

  const Experiment& experiment() const { return experiment_; }
  Kind kind() const { return experiment_.base.kind; }
  const std::vector<Run>& runs() const { return runs_; }  // in point order
  const std::vector<ConfigurationStats>& configurations() const { return configurations_; }
  // Per configuration: its final loss and accuracy against its baseline's (training).
  const std::vector<ConvergenceCheck>& convergence() const { return convergence_; }
  // Per configuration: its lost efficiency against its baseline, in parts (training).
  const std::vector<EfficiencyLoss>& efficiency_losses() const { return efficiency_losses_; }
  // Per configuration: its slowest rank and host, and whether one holds the others up (training).
  const std::vector<Stragglers>& stragglers() const { return stragglers_; }
  // Points of the experiment without a record.
  std::size_t missing() const { return missing_; }
  // The settings whose values differ between its records (plot_data.h's varying_keys).
  const std::vector<std::string>& varying_keys() const { return varying_keys_; }

 private:
  Experiment experiment_;
  std::vector<Run> runs_;
  std::vector<ConfigurationStats> configurations_;
  std::vector<ConvergenceCheck> convergence_;
  std::vector<EfficiencyLoss> efficiency_losses_;
  std::vector<Stragglers> stragglers_;
  std::size_t missing_ = 0;
  std::vector<std::string> varying_keys_;
};

// A record of `point` among `stored`: the one at the point's own id if it is the point's, else the
// latest finished one with the point's key. Null when there is none.
const StoredRecord* record_of(const Point& point, const std::vector<StoredRecord>& stored);

}  // namespace harness
