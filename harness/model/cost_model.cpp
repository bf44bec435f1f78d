#include "harness/model/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

struct FormName {
  CostForm form;
  const char* name;
  const char* formula;
};

constexpr std::array<FormName, 4> kForms{{
    {CostForm::kRing, "ring", "2(p-1)α + 2(p-1)/p·nβ + (p-1)/p·nγ"},
    {CostForm::kParameterServer, "parameter_server", "2(p-1)α + 2(p-1)·nβ + (p-1)·nγ"},
    {CostForm::kSharedMemory, "shared_memory", "2α + 2(p-1)/p·nβ + (p-1)/p·nγ"},
    {CostForm::kRingOrRecursiveDoubling, "ring_or_recursive_doubling",
     "min(ring, ⌈log2 p⌉·(α + nβ + nγ))"},
}};

const FormName& form_entry(CostForm form) {
  return *std::find_if(kForms.begin(), kForms.end(), [form](const FormName& entry) { return entry.form == form; });
}

// The coefficients of α, β and γ in one allreduce.
struct Coefficients {
  double alpha = 0;
  double beta = 0;
  double gamma = 0;
};

Coefficients ring(int ranks, double bytes) {
  const double p = ranks;
  return {2 * (p - 1), 2 * (p - 1) / p * bytes, (p - 1) / p * bytes};
}

Coefficients recursive_doubling(int ranks, double bytes) {
  const double rounds = std::ceil(std::log2(static_cast<double>(ranks)));
  return {rounds, rounds * bytes, rounds * bytes};
}

Coefficients coefficients(CostForm form, int ranks, double bytes, bool doubling) {
  if (ranks <= 1) return {};
  switch (form) {
    case CostForm::kRing:
      return ring(ranks, bytes);
    case CostForm::kParameterServer:
      return {2.0 * (ranks - 1), 2.0 * (ranks - 1) * bytes, 1.0 * (ranks - 1) * bytes};
    case CostForm::kSharedMemory: {
      const Coefficients moved = ring(ranks, bytes);
      return {2, moved.beta, moved.gamma};
    }
    case CostForm::kRingOrRecursiveDoubling:
      return doubling ? recursive_doubling(ranks, bytes) : ring(ranks, bytes);
  }
  return {};
}

double time_of(const Coefficients& c, const CostParameters& parameters) {
  return c.alpha * parameters.alpha_s + c.beta * parameters.beta_s_per_byte + c.gamma * parameters.gamma_s_per_byte;
}

// Weighted least squares of y ≈ x1·u + x2·v with u, v ≥ 0 (two unknowns: the normal equations,
// and when one comes out negative, the best fit with it at 0).
struct Row {
  double x1, x2, y, weight;
};
std::pair<double, double> non_negative_least_squares(const std::vector<Row>& rows) {
  double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
  for (const Row& r : rows) {
    s11 += r.weight * r.x1 * r.x1;
    s12 += r.weight * r.x1 * r.x2;
    s22 += r.weight * r.x2 * r.x2;
    s1y += r.weight * r.x1 * r.y;
    s2y += r.weight * r.x2 * r.y;
  }
  const double determinant = s11 * s22 - s12 * s12;
  if (determinant > 0) {
    const double u = (s1y * s22 - s2y * s12) / determinant;
    const double v = (s11 * s2y - s12 * s1y) / determinant;
    if (u >= 0 && v >= 0) return {u, v};
  }
  // One of them at 0: the better of the two one-parameter fits.
  const double only_u = s11 > 0 ? std::max(0.0, s1y / s11) : 0;
  const double only_v = s22 > 0 ? std::max(0.0, s2y / s22) : 0;
  const auto cost = [&](double u, double v) {
    double sum = 0;
    for (const Row& r : rows) sum += r.weight * std::pow(r.x1 * u + r.x2 * v - r.y, 2);
    return sum;
  };
  return cost(only_u, 0) <= cost(0, only_v) ? std::pair{only_u, 0.0} : std::pair{0.0, only_v};
}

double weight_of(double time_s) { return 1.0 / (time_s * time_s); }

// γ and the probe's intercept (loop and clock overhead) from the probe times.
double fit_gamma(const std::vector<CostSample>& samples, double& rms_relative) {
  std::vector<Row> rows;
  for (const CostSample& s : samples) {
    if (s.reduce_probe_s > 0) rows.push_back({1.0, static_cast<double>(s.bytes), s.reduce_probe_s, weight_of(s.reduce_probe_s)});
  }
  const auto [intercept, gamma] = non_negative_least_squares(rows);
  double sum = 0;
  for (const Row& r : rows) sum += std::pow((intercept + gamma * r.x2) / r.y - 1, 2);
  rms_relative = rows.empty() ? 0 : std::sqrt(sum / static_cast<double>(rows.size()));
  return gamma;
}

}  // namespace

CostForm cost_form_of(const std::string& backend) {
  if (backend == "ring" || backend == "gloo") return CostForm::kRing;
  if (backend == "ps") return CostForm::kParameterServer;
  // hier on one node is shm; across nodes its two levels have no form of their own yet.
  if (backend == "shm" || backend == "hier") return CostForm::kSharedMemory;
  if (backend == "allreduce") return CostForm::kRingOrRecursiveDoubling;
  throw ConfigError(fmt::format("backend \"{}\": the cost model has no form for it (it has allreduce, ps, ring, "
                                "gloo, shm and hier)",
                                backend));
}

std::string cost_formula(CostForm form) { return form_entry(form).formula; }

double predicted_allreduce_s(CostForm form, const CostParameters& parameters, int ranks, double bytes) {
  const double first = time_of(coefficients(form, ranks, bytes, false), parameters);
  if (form != CostForm::kRingOrRecursiveDoubling) return first;
  return std::min(first, time_of(coefficients(form, ranks, bytes, true), parameters));
}

BackendCostFit fit_cost_model(const std::string& backend, const std::vector<CostSample>& all_samples) {
  BackendCostFit fit;
  fit.backend = backend;
  fit.form = cost_form_of(backend);
  std::vector<CostSample> samples;
  std::set<int64_t> sizes;
  for (const CostSample& s : all_samples) {
    if (s.ranks < 2 || s.time_s <= 0) continue;
    samples.push_back(s);
    sizes.insert(s.bytes);
  }
  // Records that cannot be fitted are the input's fault, as a bad experiment file is: exit 2.
  if (samples.empty()) throw ConfigError(fmt::format("{}: no comm record with 2 or more ranks to fit", backend));
  if (sizes.size() < 2) {
    throw ConfigError(
        fmt::format("{}: the fit needs two or more message sizes, the records have {}", backend, sizes.size()));
  }
  if (std::none_of(samples.begin(), samples.end(), [](const CostSample& s) { return s.reduce_probe_s > 0; })) {
    throw ConfigError(
        fmt::format("{}: the records have no reduction probe (written before record schema 5): run "
                    "the comm benchmark again",
                    backend));
  }
  fit.parameters.gamma_s_per_byte = fit_gamma(samples, fit.gamma_probe_rms_relative);

  // α and β with γ fixed. For the smaller-of-two form, each size takes the algorithm that the
  // current parameters make faster, from the ring everywhere, until no size changes sides.
  std::vector<bool> doubling(samples.size(), false);
  for (int round = 0; round < 20; ++round) {
    std::vector<Row> rows;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const Coefficients c = coefficients(fit.form, samples[i].ranks, static_cast<double>(samples[i].bytes), doubling[i]);
      rows.push_back({c.alpha, c.beta, samples[i].time_s - c.gamma * fit.parameters.gamma_s_per_byte,
                      weight_of(samples[i].time_s)});
    }
    std::tie(fit.parameters.alpha_s, fit.parameters.beta_s_per_byte) = non_negative_least_squares(rows);
    if (fit.form != CostForm::kRingOrRecursiveDoubling) break;
    bool changed = false;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double bytes = static_cast<double>(samples[i].bytes);
      const bool faster = time_of(coefficients(fit.form, samples[i].ranks, bytes, true), fit.parameters) <
                          time_of(coefficients(fit.form, samples[i].ranks, bytes, false), fit.parameters);
      changed = changed || faster != doubling[i];
      doubling[i] = faster;
    }
    if (!changed) break;
  }

  std::sort(samples.begin(), samples.end(),
            [](const CostSample& a, const CostSample& b) { return std::pair(a.ranks, a.bytes) < std::pair(b.ranks, b.bytes); });
  double sum = 0;
  for (const CostSample& s : samples) {
    CostResidual residual{s, predicted_allreduce_s(fit.form, fit.parameters, s.ranks, static_cast<double>(s.bytes)), 0};
    residual.relative = residual.fitted_s / s.time_s - 1;
    sum += residual.relative * residual.relative;
    if (std::abs(residual.relative) > std::abs(fit.max_relative)) fit.max_relative = residual.relative;
    fit.residuals.push_back(residual);
  }
  fit.rms_relative = std::sqrt(sum / static_cast<double>(samples.size()));
  return fit;
}

std::vector<CostSample> cost_samples(const PointRecord& record) {
  std::vector<CostSample> samples;
  if (!record.ok() || !record.measurements || !record.measurements->comm) return samples;
  for (const MessageSizeMetrics& size : record.measurements->comm->sizes) {
    samples.push_back({record.settings.ranks, size.bytes, 1e-6 * size.time_us_median, 1e-6 * size.reduce_probe_us});
  }
  return samples;
}

Json to_json(const BackendCostFit& fit) {
  Json residuals = Json::array();
  for (const CostResidual& r : fit.residuals) {
    residuals.push_back({{"ranks", r.sample.ranks},
                         {"bytes", r.sample.bytes},
                         {"measured_us", 1e6 * r.sample.time_s},
                         {"fitted_us", 1e6 * r.fitted_s},
                         {"relative", r.relative}});
  }
  return {{"backend", fit.backend},
          {"across_nodes", fit.across_nodes},
          {"build", fit.build},
          {"form", form_entry(fit.form).name},
          {"formula", cost_formula(fit.form)},
          {"alpha_us", 1e6 * fit.parameters.alpha_s},
          {"beta_ns_per_byte", 1e9 * fit.parameters.beta_s_per_byte},
          {"gamma_ns_per_byte", 1e9 * fit.parameters.gamma_s_per_byte},
          {"rms_relative", fit.rms_relative},
          {"max_relative", fit.max_relative},
          {"gamma_probe_rms_relative", fit.gamma_probe_rms_relative},
          {"residuals", residuals}};
}

}  // namespace harness
