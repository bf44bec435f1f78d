// The communication cost model that `harness model` fits to a comm benchmark's records: one
// allreduce of n bytes over p ranks takes
//     T(p, n) = a(p)·α + b(p, n)·β + c(p, n)·γ
// with α the latency of one message (or one arrival), β the time per byte moved, γ the time per
// byte reduced, and coefficients that each backend's algorithm sets (its CostForm):
//   ring, gloo   2(p−1)            2(p−1)/p·n   (p−1)/p·n   reduce-scatter + allgather
//   ps           2(p−1)            2(p−1)·n     (p−1)·n     the root receives and sends p−1 times
//   shm          2                 2(p−1)/p·n   (p−1)/p·n   two arrivals; loads and stores
//   allreduce    the smaller of the ring and recursive doubling, ⌈log2 p⌉·(α + n·β + n·γ)
// β and γ have the same coefficient ratio in every form at every p, so no comm benchmark can tell
// them apart: γ is fitted to the benchmark's own a[i] += b[i] probe (reduce_probe_us, measured in
// the same run and conditions), then α and β to the reductions' times with γ fixed. Both fits are
// least squares on relative residuals (weights 1/t²), so that 4 bytes and 64 MiB count alike, with
// α, β ≥ 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/common/json.h"
#include "harness/results/record.h"

namespace harness {

enum class CostForm { kRing, kParameterServer, kSharedMemory, kRingOrRecursiveDoubling };

// The form of `backend`'s algorithm. Throws ConfigError for a backend the model has no form for.
CostForm cost_form_of(const std::string& backend);
// "2(p−1)α + 2(p−1)/p·nβ + (p−1)/p·nγ", as printed beside the fit.
std::string cost_formula(CostForm form);

struct CostParameters {
  double alpha_s = 0;           // per message
  double beta_s_per_byte = 0;   // per byte moved
  double gamma_s_per_byte = 0;  // per byte reduced
};

// The time of one allreduce of `bytes` over `ranks` (0 for one rank).
double predicted_allreduce_s(CostForm form, const CostParameters& parameters, int ranks, double bytes);

// One measured size: the median time of a reduction, and of the probe at that size.
struct CostSample {
  int ranks = 0;
  int64_t bytes = 0;
  double time_s = 0;
  double reduce_probe_s = 0;  // 0 when the record had no probe
};

struct CostResidual {
  CostSample sample;
  double fitted_s = 0;
  double relative = 0;  // fitted / measured − 1
};

struct BackendCostFit {
  std::string backend;
  bool across_nodes = false;  // fitted to records that ran on more than one host (sample_groups.h)
  std::string build;          // the harness build whose records it fits ("" = the running harness)
  CostForm form = CostForm::kRing;
  CostParameters parameters;
  std::vector<CostResidual> residuals;  // by ranks, then size
  double rms_relative = 0;              // root mean square of the relative residuals
  double max_relative = 0;              // the largest in magnitude, signed
  double gamma_probe_rms_relative = 0;  // the probe's own fit
};

// Fits `backend` to `samples` (its records' sizes at every ranks > 1). Throws Error when there is
// nothing to fit: no sample with two or more ranks, no probe, or fewer than two sizes.
BackendCostFit fit_cost_model(const std::string& backend, const std::vector<CostSample>& samples);

// The samples of one ok comm record: each size's median time and probe.
std::vector<CostSample> cost_samples(const PointRecord& record);

Json to_json(const BackendCostFit& fit);

}  // namespace harness
