#include "harness/results/record_damage.h"

#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace harness {
namespace {

bool is_time(double value) { return std::isfinite(value) && value >= 0; }

std::string damaged(const std::string& field, double value) {
  return fmt::format("{} is {} (expected a finite time >= 0)", field, value);
}

// The first damaged value of a series; `signed_values` for differences that may be below 0.
std::string damaged_series(const std::string& field, const std::vector<double>& values, bool signed_values = false) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (signed_values ? std::isfinite(values[i]) : is_time(values[i])) continue;
    return damaged(fmt::format("{}[{}]", field, i), values[i]);
  }
  return "";
}

std::string damaged_train(const TrainMeasurements& train) {
  const std::string steps = "measurements.train.steps.";
  for (const auto& [name, series] : {std::pair<const char*, const std::vector<double>*>{"step_s", &train.steps.step_s},
                                     {"compute_s", &train.steps.compute_s},
                                     {"comm_s", &train.steps.comm_s},
                                     {"exposed_comm_s", &train.steps.exposed_comm_s}}) {
    if (std::string why = damaged_series(steps + name, *series); !why.empty()) return why;
  }
  if (train.steps.wait_s) {
    if (std::string why = damaged_series(steps + "wait_s", *train.steps.wait_s); !why.empty()) return why;
  }
  // The slowest rank's compute minus the mean's: rounding may leave it a hair below 0.
  if (train.steps.imbalance_s) {
    if (std::string why = damaged_series(steps + "imbalance_s", *train.steps.imbalance_s, true); !why.empty()) {
      return why;
    }
  }
  // The slowest rank's compute minus the median's: a difference, like the imbalance.
  if (train.steps.slowest_lead_s) {
    if (std::string why = damaged_series(steps + "slowest_lead_s", *train.steps.slowest_lead_s, true); !why.empty()) {
      return why;
    }
  }
  if (train.steps.rank_compute) {
    const auto& rows = train.steps.rank_compute->compute_s;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string field = fmt::format("{}rank_compute.compute_s[{}]", steps, i);
      if (std::string why = damaged_series(field, rows[i]); !why.empty()) return why;
    }
  }
  if (!is_time(train.train_time_s)) return damaged("measurements.train.train_time_s", train.train_time_s);
  return "";
}

std::string damaged_comm(const CommMeasurements& comm) {
  for (std::size_t i = 0; i < comm.sizes.size(); ++i) {
    const MessageSizeMetrics& size = comm.sizes[i];
    for (const auto& [name, value] : {std::pair<const char*, double>{"time_us_median", size.time_us_median},
                                      {"time_us_min", size.time_us_min},
                                      {"time_us_max", size.time_us_max},
                                      {"algbw_gbps", size.algbw_gbps},
                                      {"busbw_gbps", size.busbw_gbps}}) {
      if (!is_time(value)) return damaged(fmt::format("measurements.sizes[{}].{}", i, name), value);
    }
  }
  return "";
}

}  // namespace

std::string damaged_timing(const Measurements& measurements) {
  if (measurements.train) {
    if (std::string why = damaged_train(*measurements.train); !why.empty()) return why;
  }
  if (measurements.comm) return damaged_comm(*measurements.comm);
  return "";
}

bool mark_damaged_record(PointRecord& record) {
  if (!record.ok() || !record.measurements) return false;
  const std::string why = damaged_timing(*record.measurements);
  if (why.empty()) return false;
  record.status = PointStatus::kFailed;
  record.reason = "damaged record: " + why;
  return true;
}

}  // namespace harness
