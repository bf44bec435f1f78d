#include "harness/results/result_set.h"
#include "harness/results/gpu_facts.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/results/plot_data.h"

namespace harness {

const StoredRecord* record_of(const Point& point, const std::vector<StoredRecord>& stored) {
  const std::string key = point.key.hash();
  const std::string own_file = point.id + ".json";
  const StoredRecord* found = nullptr;
  for (const auto& candidate : stored) {
    if (!candidate.record) continue;
    const PointRecord& record = *candidate.record;
    // The hash narrows, the full key decides.
    if (record.key != key || PointKey(record.settings, record.repeat) != point.key) continue;
    if (std::filesystem::path(candidate.path).filename() == own_file) return &candidate;
    if (found == nullptr || found->record->provenance.finished_at < record.provenance.finished_at) {
      found = &candidate;
    }
  }
  return found;
}

ResultSet ResultSet::load(const ResultsDirectory& directory, const Experiment& experiment,
                          const std::vector<Point>& points, bool refuse_unreadable) {
  const std::vector<StoredRecord> stored = read_stored_records(directory);
  if (refuse_unreadable) {
    for (const auto& file : stored) {
      if (file.record) continue;
      // The problem names the file first; say it once.
      std::string problem = file.problem;
      if (problem.rfind(file.path + ": ", 0) == 0) problem = problem.substr(file.path.size() + 2);
      throw Error(fmt::format("{}: not a readable point record ({}); move it out of {} to go on "
                              "without it",
                              file.path, problem, directory.points_dir()));
    }
  }
  ResultSet set;
  set.experiment_ = experiment;
  std::vector<ScalingInput> inputs;
  for (const auto& point : points) {
    const StoredRecord* file = record_of(point, stored);
    if (file == nullptr) {
      ++set.missing_;
      continue;
    }
    Run run;
    run.record = *file->record;
    run.path = file->path;
    if (run.record.ok() && run.record.measurements->train) {
      run.metrics = point_metrics(*run.record.measurements->train);
    }
    const PointMetrics metrics = run.metrics.value_or(PointMetrics{});
    inputs.push_back({run.record.settings, run.metrics.has_value(), metrics.time_s,
                      metrics.samples_trained});
    set.runs_.push_back(std::move(run));
  }
  std::vector<PointSettings> all_settings;
  for (const auto& run : set.runs_) all_settings.push_back(run.record.settings);
  set.varying_keys_ = harness::varying_keys(all_settings);
  if (set.kind() == Kind::kTrain) {
    ScalingAnalysis analysis =
        analyse_scaling(inputs, experiment.baseline, settings_zipped_with_ranks(experiment.sweep));
    for (std::size_t i = 0; i < set.runs_.size(); ++i) {
      set.runs_[i].configuration = analysis.configuration_of[i];
      set.runs_[i].scaling = analysis.scaling[i];
    }
    set.configurations_ = std::move(analysis.configurations);
    std::vector<const PointMetrics*> metrics;
    for (const auto& run : set.runs_) metrics.push_back(run.metrics ? &*run.metrics : nullptr);
    ConvergenceBands bands;
    if (experiment.convergence.contains("loss_band")) bands.loss = experiment.convergence["loss_band"].get<double>();
    if (experiment.convergence.contains("accuracy_band")) {
      bands.accuracy = experiment.convergence["accuracy_band"].get<double>() / 100;
    }
    set.convergence_ = check_convergence(set.configurations_, metrics, bands);
    set.efficiency_losses_ = harness::efficiency_losses(set.configurations_, metrics);
    for (const ConfigurationStats& configuration : set.configurations_) {
      std::vector<const Measurements*> measured;
      for (const int r : configuration.runs) {
        const Run& run = set.runs_[static_cast<std::size_t>(r)];
        if (run.metrics) measured.push_back(&*run.record.measurements);
      }
      set.stragglers_.push_back(find_stragglers(measured));
    }
  }
  return set;
}

std::string run_exchange_path(const Run& run) {
  return run.record.measurements ? run.record.measurements->exchange_path : "";
}

std::string run_oversubscribed(const Run& run) {
  const auto& measurements = run.record.measurements;
  return measurements && measurements->oversubscribed ? describe_oversubscription(*measurements->oversubscribed) : "";
}

std::string run_gpus(const Run& run) {
  const auto& measurements = run.record.measurements;
  return measurements && measurements->gpus ? describe_gpus(measurements->hosts, *measurements->gpus) : "";
}

}  // namespace harness
