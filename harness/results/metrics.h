// Metrics derived from stored results only, so they can be recomputed without rerunning.
#pragma once

#include <optional>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

// Per point, from the worker's measurements (see worker.h for the record it writes).
struct PointMetrics {
  double time_s = 0;                    // training wall time, evaluation excluded
  double samples_trained = 0;           // by all ranks
  double throughput_samples_per_s = 0;  // over all ranks
  // Means over steps of the slowest rank's step time and of that same rank's compute and
  // communication time.
  double step_time_s = 0;
  double compute_time_s = 0;
  double comm_time_s = 0;          // in the backend (with packing, unless overlapped)
  double exposed_comm_time_s = 0;  // the step waited for communication after backward
  // The part of exposed_comm_time_s that same rank spent waiting for the slowest training
  // rank's compute rather than for the exchange itself.
  std::optional<double> wait_time_s;
  // Mean over steps of the load imbalance (load_imbalance_per_step): what a training rank
  // waits for a slower one on average. Both absent in records written before they were measured.
  std::optional<double> imbalance_time_s;
  double comm_fraction = 0;        // exposed_comm_time_s / step_time_s
  double overlap = 0;              // 1 - exposed / comm: the share of communication hidden
  double final_loss = 0;                // training loss of the last epoch
  double accuracy = 0;                  // held-out accuracy after the last epoch, in [0, 1]
};

// Throws Error when `measurements` lacks a field the metrics need.
PointMetrics point_metrics(const Json& measurements);

// An epoch's loss or accuracy: a number, or NaN where the record holds null. JSON has no NaN, so
// a run whose loss diverged to NaN or infinity is stored with null there; its timings still count.
double epoch_value(const Json& epoch, const char* field);

// Per step, from every rank's compute time (rank r's step s at compute_s[r × steps + s], as the
// worker gathers them): the slowest training rank's compute minus the mean training rank's. A
// synchronous step waits for its slowest rank, so this is how long a rank waits, on average,
// before the exchange can start: jitter and imbalance, not communication. Ranks with
// training[r] false (a parameter server that only serves) are left out; 0 with fewer than two.
std::vector<double> load_imbalance_per_step(const std::vector<double>& compute_s,
                                            std::size_t steps, const std::vector<bool>& training);

// One message size of a communication benchmark point (kind "comm"); see comm_benchmark.h.
struct MessageSizeMetrics {
  int64_t bytes = 0;
  double time_us_median = 0;  // of the slowest rank's time per reduction
  double time_us_min = 0;
  double time_us_max = 0;
  double algbw_gbps = 0;      // bytes / median time, 10^9 bytes/s
  double busbw_gbps = 0;      // algbw · 2(p−1)/p
  int64_t wrong = 0;          // elements that differ from MPI_Allreduce's result, all ranks
};

Json to_json(const MessageSizeMetrics& size);
// Reads measurements["sizes"]; throws Error when it is missing or malformed.
std::vector<MessageSizeMetrics> message_size_metrics(const Json& measurements);

// The median (mean of the middle two for an even count); 0 for no values.
double median_of(std::vector<double> values);

// One run (a point and repeat) as the cross-point metrics see it.
struct ScalingInput {
  PointSettings settings;
  bool ok = false;
  double time_s = 0;
  double samples_trained = 0;
};

// A median and its bootstrap 95% interval (2.5th and 97.5th percentiles of the median over
// resamples of the repeats; all three equal with one repeat).
struct Interval {
  double median = 0;
  double low = 0;
  double high = 0;
};

// The runs of one configuration (the same settings, every repeat).
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

// Runs grouped into configurations (first-seen order) with medians, intervals and scaling.
// The baseline of a configuration: with `baseline` empty, the usable configuration with the
// fewest ranks among those whose settings are otherwise equal (timeout_s aside); otherwise the
// one equal on every key but those `baseline` names, which must have its values. Times are
// compared per trained sample: an epoch drops the last partial global batch, so with more ranks
// an epoch may train a few samples fewer, and a plain time ratio would credit that to scaling.
std::vector<ConfigurationStats> configuration_stats(const std::vector<ScalingInput>& runs,
                                                    const Json& baseline = Json::object());

// Per run: speedup = its baseline configuration's median time per sample / the run's own.
struct Scaling {
  int baseline = -1;  // index of the baseline configuration (see configuration_stats)
  double speedup = 0;
  double efficiency = 0;
};
std::vector<std::optional<Scaling>> scaling_metrics(const std::vector<ScalingInput>& runs,
                                                    const Json& baseline = Json::object());

}  // namespace harness
