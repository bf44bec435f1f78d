// `harness model`'s outputs: the fits of a comm run (console tables with units and residuals,
// COMM_RUN/model.json and model.csv, plots/model_fit) and what they predict for a training run
// (console, TRAIN_RUN/prediction.json and prediction.csv, plots/prediction). Everything is derived
// from stored records, so it can be made again at any time.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/model/cost_model.h"
#include "harness/model/training_prediction.h"
#include "harness/results/result_set.h"

namespace harness {

// The fits of one comm run, with what the prediction must say about where they were measured.
struct CostModel {
  std::string comm_dir;
  std::vector<BackendCostFit> fits;  // in the experiment's backend order; a backend that ran on
                                     // one node and across nodes has one fit of each
  std::vector<std::string> left_out;  // records not fitted, one line per reason
  int hosts = 1;                     // distinct hosts its records ran on
  int max_ranks = 0;
};

// Fits every backend of `comm` (a comm benchmark's result set). Throws ConfigError when it is not
// one, Error when a backend has nothing to fit.
CostModel fit_comm_run(const ResultSet& comm, const std::string& comm_dir);

// The fit each backend's training configurations are predicted with: its fit across nodes where
// the comm run has one (predictions reach rank counts that clusters run across nodes), else its
// one-node fit. A line in `notes` for each backend that had both. When the comm run fitted several
// builds, those of the training run's one build (`train_builds`, the values of its setting
// `build`); throws ConfigError when it has several, or one the comm run did not fit.
std::map<std::string, BackendCostFit> prediction_fits(const CostModel& model, const std::set<std::string>& train_builds,
                                                      std::vector<std::string>& notes);

std::string cost_model_console(const CostModel& model);
std::string prediction_console(const TrainingPrediction& prediction);

// Writes model.json, model.csv and plots/model_fit.* into the comm run's directory; returns the
// files written.
std::vector<std::string> write_cost_model(const CostModel& model, const ResultSet& comm);
// Writes prediction.json, prediction.csv and plots/prediction.* into the training run's
// directory; returns the files written.
std::vector<std::string> write_prediction(const TrainingPrediction& prediction, const CostModel& model,
                                          const ResultSet& train, const std::string& train_dir);

}  // namespace harness
