#include "harness/model/training_prediction.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/registry.h"
#include "harness/common/errors.h"
#include "harness/results/scaling.h"
#include "harness/results/statistics.h"
#include "harness/results/table.h"

namespace harness {
namespace {

// Configurations equal but for the ranks, what moves with them (`zipped`: a weak-scaling sweep's
// dataset_size) and what only limits or observes a run are one family.
std::string family_key(const PointSettings& settings, const std::vector<std::string>& zipped) {
  PointSettings family = without_observation(settings);
  family.ranks = 0;
  family.timeout_s = 0;
  Json values = to_json(family);
  for (const std::string& key : zipped) values.erase(key);
  return values.dump();
}

std::string family_label(const Experiment& experiment, const PointSettings& settings) {
  const Json values = to_json(settings);
  const std::vector<std::string> zipped = settings_zipped_with_ranks(experiment.sweep);
  std::string text = settings.workload + " " + settings.backend;
  for (const auto& axis : experiment.sweep) {
    if (axis.key == "workload" || axis.key == "backend" || axis.key == "ranks") continue;
    if (std::find(zipped.begin(), zipped.end(), axis.key) != zipped.end()) continue;
    const Json& value = values[axis.key];
    text += " " + axis.key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return text;
}

// A training configuration's medians over its ok repeats.
struct Measured {
  double compute_s = 0;
  double comm_s = 0;  // without the wait for the slowest rank's compute
  double step_s = 0;
  const SgdFacts* sgd = nullptr;
};

std::optional<Measured> measured(const ResultSet& set, const ConfigurationStats& configuration) {
  std::vector<double> compute, comm, step;
  Measured result;
  for (const int index : configuration.runs) {
    const Run& run = set.runs()[static_cast<std::size_t>(index)];
    if (!run.metrics || !run.record.measurements || !run.record.measurements->train ||
        !run.record.measurements->train->sgd) {
      continue;
    }
    compute.push_back(run.metrics->compute_time_s);
    comm.push_back(run.metrics->comm_time_s - run.metrics->wait_time_s.value_or(0));
    step.push_back(run.metrics->step_time_s);
    result.sgd = &*run.record.measurements->train->sgd;
  }
  if (step.empty()) return std::nullopt;
  result.compute_s = median_of(compute);
  result.comm_s = median_of(comm);
  result.step_s = median_of(step);
  return result;
}

// The fit that times a bucket of `bytes` at these settings: MPI_Allreduce's (`mpi_fit`, where the
// comm run has one) below the size where the backend hands its buffers to MPI_Allreduce.
const BackendCostFit& fit_for_bucket(const BackendCostFit& fit, const BackendCostFit* mpi_fit,
                                     const PointSettings& at, double bytes) {
  const BackendInfo* info = backend_or_null(at.backend);
  if (mpi_fit == nullptr || info == nullptr || info->hands_to_mpi_below_bytes == nullptr) return fit;
  return bytes < static_cast<double>(info->hands_to_mpi_below_bytes(backend_options(at))) ? *mpi_fit : fit;
}

PredictedStep predict_step(const FamilyPrediction& family, const BackendCostFit& fit, const BackendCostFit* mpi_fit,
                           const PointSettings& settings, int ranks) {
  PredictedStep step;
  step.ranks = ranks;
  PointSettings at = settings;
  at.ranks = ranks;
  step.workers = worker_layout(at, 0, ranks).workers;
  step.per_rank_batch = per_rank_batch(at, step.workers);
  step.compute_s = family.compute_per_sample_s * static_cast<double>(step.per_rank_batch);
  const double bucket_bytes = static_cast<double>(family.gradient_bytes) / static_cast<double>(family.buckets);
  const BackendCostFit& bucket_fit = fit_for_bucket(fit, mpi_fit, at, bucket_bytes);
  step.comm_s = static_cast<double>(family.buckets) *
                predicted_allreduce_s(bucket_fit.form, bucket_fit.parameters, ranks, bucket_bytes);
  // The sums are divided by the training ranks: one more pass over the gradients.
  if (step.workers > 1) step.comm_s += static_cast<double>(family.gradient_bytes) * fit.parameters.gamma_s_per_byte;
  step.step_s = step.compute_s + step.comm_s;
  step.step_overlap_s = step.compute_s / 3 + std::max(2 * step.compute_s / 3, step.comm_s);
  const double work = static_cast<double>(step.workers) * static_cast<double>(step.per_rank_batch) *
                      family.compute_per_sample_s;
  step.speedup = work / step.step_s;
  step.speedup_overlap = work / step.step_overlap_s;
  step.efficiency = step.speedup / ranks;
  step.efficiency_overlap = step.speedup_overlap / ranks;
  return step;
}

// The configurations of each family, in first-seen order.
std::vector<std::pair<std::string, std::vector<int>>> configuration_families(const ResultSet& train) {
  std::vector<std::pair<std::string, std::vector<int>>> families;
  const std::vector<std::string> zipped = settings_zipped_with_ranks(train.experiment().sweep);
  for (std::size_t c = 0; c < train.configurations().size(); ++c) {
    const std::string key = family_key(train.configurations()[c].settings, zipped);
    auto found = std::find_if(families.begin(), families.end(), [&](const auto& f) { return f.first == key; });
    if (found == families.end()) found = families.insert(families.end(), {key, {}});
    found->second.push_back(static_cast<int>(c));
  }
  return families;
}

// The family's predicted steps at `ranks` and at every measured rank count, each with what was
// measured there.
void predict_steps(FamilyPrediction& family, const std::map<int, Measured>& by_ranks, const BackendCostFit& fit,
                   const BackendCostFit* mpi_fit, const PointSettings& settings, const std::vector<int>& ranks) {
  std::set<int> all_ranks(ranks.begin(), ranks.end());
  for (const auto& [r, values] : by_ranks) all_ranks.insert(r);
  for (const int r : all_ranks) {
    // Strong scaling runs out of samples: a rank with less than one per step trains nothing.
    PointSettings at = settings;
    at.ranks = r;
    if (per_rank_batch(at, worker_layout(at, 0, r).workers) < 1) continue;
    PredictedStep step = predict_step(family, fit, mpi_fit, settings, r);
    if (const auto m = by_ranks.find(r); m != by_ranks.end()) {
      step.measured_comm_s = m->second.comm_s;
      step.measured_step_s = m->second.step_s;
      step.measured_speedup = static_cast<double>(step.workers) * static_cast<double>(step.per_rank_batch) *
                              family.compute_per_sample_s / m->second.step_s;
    }
    family.steps.push_back(step);
  }
}

// One family's prediction, or nothing with the reason in `skipped`.
std::optional<FamilyPrediction> predict_family(const ResultSet& train, const std::vector<int>& members,
                                               const std::map<std::string, BackendCostFit>& fits,
                                               const std::vector<int>& ranks, std::vector<std::string>& skipped) {
  const PointSettings& settings = train.configurations()[static_cast<std::size_t>(members.front())].settings;
  const std::string label = family_label(train.experiment(), settings);
  const auto fit = fits.find(settings.backend);
  if (settings.device != "cpu") {
    skipped.push_back(label + ": device " + settings.device + " (the model is fitted on host buffers)");
    return std::nullopt;
  }
  if (fit == fits.end()) {
    skipped.push_back(label + ": the comm run has no fit for backend " + settings.backend);
    return std::nullopt;
  }
  // The measured configurations by ranks; the fewest ranks give the compute per sample.
  std::map<int, Measured> by_ranks;
  for (const int c : members) {
    const ConfigurationStats& configuration = train.configurations()[static_cast<std::size_t>(c)];
    if (auto values = measured(train, configuration)) by_ranks[configuration.settings.ranks] = *values;
  }
  if (by_ranks.empty()) {
    skipped.push_back(label + ": no ok record with SGD measurements");
    return std::nullopt;
  }
  FamilyPrediction family;
  family.label = label;
  family.backend = settings.backend;
  family.overlap = settings.overlap;
  const auto& [base_ranks, base] = *by_ranks.begin();
  family.base_ranks = base_ranks;
  family.compute_per_sample_s = base.compute_s / static_cast<double>(base.sgd->per_rank_batch);
  family.gradient_bytes = 4 * base.sgd->parameters;
  family.buckets = std::max<int64_t>(1, base.sgd->buckets);
  const auto mpi_fit = fits.find("allreduce");
  predict_steps(family, by_ranks, fit->second, mpi_fit == fits.end() ? nullptr : &mpi_fit->second, settings, ranks);
  return family;
}

// Marks the steps where the forms reach beyond the comm run's measurements: more ranks than it
// had, or buckets larger than its largest message of the backend (one rank communicates nothing).
void mark_extrapolated(TrainingPrediction& prediction, const std::map<std::string, BackendCostFit>& fits,
                       int comm_max_ranks) {
  for (FamilyPrediction& family : prediction.families) {
    int64_t largest_message = 0;
    if (const auto fit = fits.find(family.backend); fit != fits.end()) {
      for (const CostResidual& residual : fit->second.residuals) {
        largest_message = std::max(largest_message, residual.sample.bytes);
      }
    }
    const int64_t bucket_bytes = family.gradient_bytes / family.buckets;
    for (PredictedStep& step : family.steps) {
      step.extrapolated = step.ranks > 1 && (step.ranks > comm_max_ranks ||
                                             (largest_message > 0 && bucket_bytes > largest_message));
    }
  }
}

// What the predictions assume, printed and written with them.
std::vector<std::string> prediction_assumptions(int comm_hosts, int comm_max_ranks, int largest_base) {
  std::vector<std::string> a;
  a.push_back("gamma is the comm run's own a[i] += b[i] probe (every rank at once); alpha and beta are fitted with it fixed");
  a.push_back(comm_hosts <= 1
                  ? "the comm run's ranks shared one host: its memory and loopback stand in for a network, so "
                    "beta is a node's, not a cluster's"
                  : fmt::format("the comm run spanned {} hosts: beta is their network's", comm_hosts));
  a.push_back(fmt::format("beyond {} ranks (the comm run's most) the forms extrapolate: no contention, no topology",
                          comm_max_ranks));
  a.push_back(fmt::format("compute per sample stays as measured at each family's fewest ranks (up to {}): no "
                          "inflation from ranks sharing cores, caches or memory bandwidth",
                          largest_base));
  a.push_back("the gradients are float32, split into the records' buckets of equal size, one allreduce each, "
              "then divided by the training ranks in one more pass at gamma per byte");
  a.push_back("measured communication is the backend's time per step without the wait for the slowest rank's "
              "compute (comm_time - wait_time), which the model does not predict");
  a.push_back("strong scaling stops where a rank would get less than one sample per step");
  a.push_back("with overlap, the reductions hide behind the backward pass, taken as 2/3 of compute; the forward "
              "pass and the optimizer step do not overlap");
  a.push_back("speedup is against one rank without communication; efficiency = speedup / ranks");
  return a;
}

}  // namespace

TrainingPrediction predict_training(const ResultSet& train, const std::map<std::string, BackendCostFit>& fits,
                                    const std::vector<int>& ranks, int comm_hosts, int comm_max_ranks) {
  if (train.kind() != Kind::kTrain) {
    throw ConfigError(fmt::format("--predict {}: not a training run (experiment kind comm)", train.experiment().name));
  }
  TrainingPrediction prediction;
  int largest_base = 0;
  for (const auto& [key, members] : configuration_families(train)) {
    std::optional<FamilyPrediction> family = predict_family(train, members, fits, ranks, prediction.skipped);
    if (!family) continue;
    largest_base = std::max(largest_base, family->base_ranks);
    prediction.families.push_back(std::move(*family));
  }
  if (prediction.families.empty()) {
    throw ConfigError(fmt::format("--predict: no configuration of {} could be predicted ({})", train.experiment().name,
                                  fmt::join(prediction.skipped, "; ")));
  }
  prediction.assumptions = prediction_assumptions(comm_hosts, comm_max_ranks, largest_base);
  mark_extrapolated(prediction, fits, comm_max_ranks);
  return prediction;
}

Json to_json(const TrainingPrediction& prediction) {
  Json families = Json::array();
  const auto optional = [](const std::optional<double>& value) { return value ? Json(*value) : Json(); };
  for (const FamilyPrediction& family : prediction.families) {
    Json steps = Json::array();
    for (const PredictedStep& s : family.steps) {
      steps.push_back({{"ranks", s.ranks},
                       {"workers", s.workers},
                       {"per_rank_batch", s.per_rank_batch},
                       {"compute_s", s.compute_s},
                       {"comm_s", s.comm_s},
                       {"step_s", s.step_s},
                       {"step_overlap_s", s.step_overlap_s},
                       {"speedup", s.speedup},
                       {"speedup_overlap", s.speedup_overlap},
                       {"efficiency", s.efficiency},
                       {"efficiency_overlap", s.efficiency_overlap},
                       {"measured_comm_s", optional(s.measured_comm_s)},
                       {"measured_step_s", optional(s.measured_step_s)},
                       {"measured_speedup", optional(s.measured_speedup)},
                       {"extrapolated", s.extrapolated}});
    }
    families.push_back({{"label", family.label},
                        {"backend", family.backend},
                        {"overlap", family.overlap},
                        {"base_ranks", family.base_ranks},
                        {"compute_per_sample_s", family.compute_per_sample_s},
                        {"gradient_bytes", family.gradient_bytes},
                        {"buckets", family.buckets},
                        {"steps", steps}});
  }
  return {{"families", families}, {"skipped", prediction.skipped}, {"assumptions", prediction.assumptions}};
}

std::string prediction_csv(const TrainingPrediction& prediction) {
  using Row = std::pair<const FamilyPrediction*, const PredictedStep*>;
  std::vector<Row> rows;
  for (const auto& family : prediction.families) {
    for (const auto& step : family.steps) rows.emplace_back(&family, &step);
  }
  // A column of a PredictedStep field, a double or an optional (empty where not measured).
  const auto number = []<typename Field>(Field PredictedStep::*field) {
    return [field](const Row& row) { return csv_number(row.second->*field); };
  };
  const std::vector<CsvColumn<Row>> columns = {
      {"family", [](const Row& row) { return row.first->label; }},
      {"backend", [](const Row& row) { return row.first->backend; }},
      {"overlap", [](const Row& row) { return std::string(row.first->overlap ? "true" : "false"); }},
      {"ranks", [](const Row& row) { return std::to_string(row.second->ranks); }},
      {"workers", [](const Row& row) { return std::to_string(row.second->workers); }},
      {"per_rank_batch", [](const Row& row) { return std::to_string(row.second->per_rank_batch); }},
      {"gradient_bytes", [](const Row& row) { return std::to_string(row.first->gradient_bytes); }},
      {"buckets", [](const Row& row) { return std::to_string(row.first->buckets); }},
      {"compute_s", number(&PredictedStep::compute_s)},
      {"comm_s", number(&PredictedStep::comm_s)},
      {"measured_comm_s", number(&PredictedStep::measured_comm_s)},
      {"step_s", number(&PredictedStep::step_s)},
      {"step_overlap_s", number(&PredictedStep::step_overlap_s)},
      {"measured_step_s", number(&PredictedStep::measured_step_s)},
      {"speedup", number(&PredictedStep::speedup)},
      {"speedup_overlap", number(&PredictedStep::speedup_overlap)},
      {"measured_speedup", number(&PredictedStep::measured_speedup)},
      {"efficiency", number(&PredictedStep::efficiency)},
      {"efficiency_overlap", number(&PredictedStep::efficiency_overlap)},
      {"extrapolated", [](const Row& row) { return std::string(row.second->extrapolated ? "true" : "false"); }},
  };
  return format_csv(columns, rows);
}

}  // namespace harness
