// Speedup and efficiency across the points of a study: runs grouped into configurations (the
// same settings, every repeat), each configuration's baseline, medians with bootstrap intervals,
// and each run's own speedup against its baseline's median. Computed once per result set.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/results/statistics.h"
#include "harness/study/experiment.h"
#include "harness/study/settings.h"

namespace harness {

// One run (a point and repeat) as scaling sees it.
struct ScalingInput {
  PointSettings settings;
  bool ok = false;
  double time_s = 0;           // training wall time
  double samples_trained = 0;  // all ranks
};

// The runs of one configuration.
struct ConfigurationStats {
  PointSettings settings;
  std::vector<int> runs;   // indices into the input, in order
  int ok_runs = 0;
  Interval time_s;         // training wall time
  Interval throughput;     // samples/s, all ranks
  int baseline = -1;       // index of the baseline configuration; -1 without one
  Interval speedup;        // baseline time per sample / this one's (medians; intervals resample both)
  Interval efficiency;     // speedup × baseline ranks / ranks
  // Karp-Flatt experimentally determined serial fraction e = (1/S − 1/p) / (1 − 1/p), with
  // p = ranks / baseline ranks; absent for p <= 1.
  std::optional<double> karp_flatt;
};

// The ranks a configuration's efficiency divides by: every rank, but the servers of scheme
// async_ps, which only serve (the parameter server backend's serving rank 0 counts: it is part
// of the synchronous step).
int scaling_ranks(const PointSettings& settings);

// Per run: speedup = its baseline configuration's median time per sample / the run's own.
struct Scaling {
  int baseline = -1;  // index of the baseline configuration
  double speedup = 0;
  double efficiency = 0;
};

struct ScalingAnalysis {
  std::vector<ConfigurationStats> configurations;  // first-seen order
  std::vector<int> configuration_of;               // per run
  std::vector<std::optional<Scaling>> scaling;     // per run; empty for failed runs
};

// The baseline of a configuration: with `baseline` empty, the usable configuration with the
// fewest ranks among those whose settings are otherwise equal (timeout_s aside, and the settings
// in `moves_with_ranks`: a weak-scaling sweep zips dataset_size with ranks, and its baseline is
// the point of the same zip with the fewest ranks); otherwise the one equal on every key but
// those `baseline` names (and those in `moves_with_ranks` when it names ranks), which must have
// its values. Times are compared per trained sample: an
// epoch drops the last partial global batch, so with more ranks an epoch may train a few samples
// fewer, and a plain time ratio would credit that to scaling.
ScalingAnalysis analyse_scaling(const std::vector<ScalingInput>& runs, const Json& baseline = Json::object(),
                                const std::vector<std::string>& moves_with_ranks = {});

// The settings zipped with "ranks" in an experiment's sweep (every other key of a zip group that
// has ranks): they move with it, so the default baseline does not hold them equal.
std::vector<std::string> settings_zipped_with_ranks(const std::vector<SweepAxis>& sweep);

// Before a training sweep runs: a warning when its points vary ranks but every one would be its
// own baseline (no two differ only in ranks and what moves with it), so that speedup and
// efficiency would read 1 everywhere; or, with a "baseline" block, when some configuration has no
// point to compare with (an exclude rule took it); "" otherwise.
std::string baseline_warning(const Experiment& experiment, const std::vector<PointSettings>& points);

}  // namespace harness
