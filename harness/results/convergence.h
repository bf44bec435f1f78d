// Convergence across scale: whether a configuration reached the final training loss and held-out
// accuracy of its baseline (the configuration its speedup is measured against), within a band.
// A configuration that is faster but ends worse bought its speed with convergence; the console
// and stats.csv say so.
//
// The band is the experiment's "convergence" block ({"loss_band": 0.05, "accuracy_band": 1}, the
// accuracy in percentage points), else the baseline's own spread over its repeats (the range of
// its final values), at least 5% of its final loss and 1 percentage point of accuracy (or one
// held-out sample, when there are fewer than 100).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/results/metrics.h"
#include "harness/results/scaling.h"

namespace harness {

struct ConvergenceBands {
  std::optional<double> loss;      // absolute, in the loss's unit
  std::optional<double> accuracy;  // absolute, as a fraction (the block's points / 100)
};

inline constexpr double kMinLossBandFraction = 0.05;
inline constexpr double kMinAccuracyBand = 0.01;

struct ConvergenceCheck {
  bool judged = false;  // a baseline other than itself, with successful runs on both sides
  bool measured = false;  // final_loss and accuracy hold this configuration's own medians
  double final_loss = 0;         // medians over the successful runs (finite ones)
  double accuracy = 0;
  double baseline_loss = 0;
  double baseline_accuracy = 0;
  double loss_band = 0;
  double accuracy_band = 0;
  bool diverged = false;         // a run's final loss is not a number
  bool worse_loss = false;       // final_loss > baseline_loss + loss_band
  bool worse_accuracy = false;   // accuracy < baseline_accuracy - accuracy_band

  bool worse() const { return diverged || worse_loss || worse_accuracy; }
  // "", "ok", "diverged", "worse loss", "worse accuracy", "worse loss and accuracy".
  std::string verdict() const;
};

// Per configuration of `configurations`, whose runs index `metrics` (null for a failed run).
std::vector<ConvergenceCheck> check_convergence(const std::vector<ConfigurationStats>& configurations,
                                                const std::vector<const PointMetrics*>& metrics,
                                                const ConvergenceBands& bands);

}  // namespace harness
