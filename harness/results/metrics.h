// A training point's metrics, from its typed measurements only, so they can be recomputed from
// stored records without rerunning anything.
#pragma once

#include <cstdint>
#include <optional>

#include "harness/results/record.h"

namespace harness {

struct PointMetrics {
  double time_s = 0;                    // training wall time, evaluation excluded
  double samples_trained = 0;           // by all ranks
  double samples_per_step = 0;          // the global batch (SGD workloads; 0 otherwise)
  double throughput_samples_per_s = 0;  // over all ranks
  // Means over steps of the training ranks' mean step, compute and communication time (record
  // schema 13; before, the times of the rank whose step took longest).
  double step_time_s = 0;
  double compute_time_s = 0;
  double comm_time_s = 0;          // in the backend (with packing, unless overlapped)
  double exposed_comm_time_s = 0;  // the step waited for communication after backward
  // The part of exposed_comm_time_s spent waiting for the slowest training rank's compute
  // rather than for the exchange itself (the training ranks' mean).
  std::optional<double> wait_time_s;
  // Mean over steps of the load imbalance: what a training rank waits for a slower one on
  // average. Both absent in records written before they were measured.
  std::optional<double> imbalance_time_s;
  double comm_fraction = 0;        // exposed_comm_time_s / step_time_s
  double overlap = 0;              // 1 - exposed / comm: the share of communication hidden
  double final_loss = 0;           // training loss of the last epoch (NaN when it diverged)
  double accuracy = 0;             // held-out accuracy after the last epoch, in [0, 1]
  int64_t test_samples = 0;        // the held-out samples it was measured on
  // With a target: whether it was reached, and the training time until it was (record.h).
  std::optional<bool> target_reached;
  std::optional<double> time_to_target_s;
  // Scheme async_ps: the applied gradients' staleness in steps (median, 95th percentile, most),
  // and the busiest server's share of its time handling messages.
  std::optional<double> staleness_median;
  std::optional<double> staleness_p95;
  std::optional<double> staleness_max;
  std::optional<double> server_busy_fraction;
  // Scheme pipeline (record.h's PipelineFacts): the measured and the predicted bubble, the stages'
  // imbalance, the largest stage's peak activation memory, and where the stages' step went (the
  // four shares add up to 1): compute (the stages' mean), the bubble of a balanced pipeline at
  // that compute, what the stages' imbalance adds (their schedules replayed with each stage's own
  // times), and the rest (transfers, the replicas' averaging).
  std::optional<double> pipeline_bubble;
  std::optional<double> pipeline_bubble_predicted;
  // The bubble the stages' schedules would have with their measured passes and free transfers
  // (replayed): what the measured bubble is, less the transfers' cost.
  std::optional<double> pipeline_bubble_replayed;
  std::optional<double> stage_imbalance;
  std::optional<double> peak_activation_mb;
  std::optional<double> pipeline_compute_share;
  std::optional<double> pipeline_bubble_share;
  std::optional<double> pipeline_imbalance_share;
  std::optional<double> pipeline_transfer_share;
};

PointMetrics point_metrics(const TrainMeasurements& train);

}  // namespace harness
