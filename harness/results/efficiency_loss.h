// Where the efficiency went: a configuration's lost efficiency (1 − efficiency against its
// baseline) split into what its step spends beyond the ideal step, as parts of its own step:
//
//   ideal step      = the baseline's step × r, r = (G / G_base) · (p_base / p): the same time per
//                     sample spread over p ranks instead of p_base (G: samples per step, all ranks)
//   compute         = compute − r · baseline compute: ranks sharing cores, caches and memory
//                     bandwidth (forward, backward and the update take longer per sample)
//   communication   = exposed exchange − r · the baseline's: what the step waited for the exchange
//   waiting         = waiting for the slowest training rank − r · the baseline's
//   rest            = 1 − efficiency − the three: the rest of the step (packing, the step's own
//                     bookkeeping) and what the wall time has beyond the steps (epoch barriers)
//
// Each is divided by this configuration's step, so the four add up to 1 − efficiency. Medians
// over the runs of each configuration; a part may be negative (faster than ideal, or noise).
#pragma once

#include <string>
#include <vector>

#include "harness/results/metrics.h"
#include "harness/results/scaling.h"

namespace harness {

struct EfficiencyLoss {
  bool judged = false;   // a baseline other than itself, both with successful SGD runs
  double lost = 0;       // 1 − the configuration's median efficiency
  double compute = 0;    // compute inflation
  double communication = 0;
  double waiting = 0;
  double rest = 0;
};

// Per configuration of `configurations`, whose runs index `metrics` (null for a failed run).
std::vector<EfficiencyLoss> efficiency_losses(const std::vector<ConfigurationStats>& configurations,
                                              const std::vector<const PointMetrics*>& metrics);

}  // namespace harness
