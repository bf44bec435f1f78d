// What the cost model (cost_model.h) predicts for a training run: for each family of its
// configurations (equal but for the ranks), the communication time per step at any number of
// ranks, the step time with and without overlap, and from them speedup and efficiency; beside
// the measured values where the run has the family at that many ranks.
//
// The step at p ranks:
//   compute   C = c · b(p): c the compute time per sample measured at the family's fewest ranks,
//             b(p) each training rank's batch at p (weak or strong scaling, as the run's);
//   comm      T = k · T_backend(p, G/k) + G·γ: G the gradient bytes, k the buckets, and the pass
//             that divides the sums by the training ranks;
//   without overlap  C + T;
//   with overlap     C/3 + max(2C/3, T): the reductions hide behind the backward pass, taken as
//                    two thirds of compute; the forward pass and the optimizer step do not overlap.
//   speedup  = workers(p) · b(p) · c / step (against one rank without communication);
//   efficiency = speedup / p.
// Every assumption is listed in TrainingPrediction::assumptions and printed with the table.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/common/json.h"
#include "harness/model/cost_model.h"
#include "harness/results/result_set.h"

namespace harness {

struct PredictedStep {
  int ranks = 0;
  int workers = 0;  // ranks that train
  int64_t per_rank_batch = 0;
  double compute_s = 0;
  double comm_s = 0;
  double step_s = 0;          // without overlap
  double step_overlap_s = 0;  // with overlap
  double speedup = 0;
  double speedup_overlap = 0;
  double efficiency = 0;
  double efficiency_overlap = 0;
  // Where the run has the family at these ranks: the medians over repeats of the mean per step.
  std::optional<double> measured_comm_s;  // without the wait for the slowest rank's compute
  std::optional<double> measured_step_s;
  std::optional<double> measured_speedup;  // workers · b · c / measured step, as the predicted one
  // More ranks than the comm run measured, or a bucket larger than its largest message: the forms
  // extrapolate (no contention, no topology).
  bool extrapolated = false;
};

struct FamilyPrediction {
  std::string label;  // "mnist_cnn allreduce batch_size=32"
  std::string backend;
  bool overlap = false;       // the family's setting: which prediction its measured steps meet
  int base_ranks = 0;         // where c was measured
  double compute_per_sample_s = 0;
  int64_t gradient_bytes = 0;
  int64_t buckets = 1;
  std::vector<PredictedStep> steps;  // by ranks
};

struct TrainingPrediction {
  std::vector<FamilyPrediction> families;
  std::vector<std::string> skipped;      // "resnet gloo ...: no model for backend gloo"
  std::vector<std::string> assumptions;  // printed and written with the numbers
};

// Predicts every family of `train` (an SGD training run) at `ranks` and at every rank count the
// run measured. `fits` by backend; `comm_hosts` the hosts the comm run spanned. Throws
// ConfigError when the run is not a training run or no family could be predicted.
TrainingPrediction predict_training(const ResultSet& train, const std::map<std::string, BackendCostFit>& fits,
                                    const std::vector<int>& ranks, int comm_hosts, int comm_max_ranks);

Json to_json(const TrainingPrediction& prediction);
// One row per family and rank count.
std::string prediction_csv(const TrainingPrediction& prediction);

}  // namespace harness
