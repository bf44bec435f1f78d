// The rows of the training tables, shared by the CSV files (train_report.cpp) and the console
// tables (train_console.cpp): a run, or a configuration (its repeats together).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/results/result_set.h"

namespace harness {

// A configuration of a result set, by index.
struct ConfigurationRow {
  const ResultSet* set;
  std::size_t index;
  const ConfigurationStats& stats() const { return set->configurations()[index]; }
  const Run& first_run() const { return set->runs()[static_cast<std::size_t>(stats().runs.front())]; }
};

// The values of `value` over the configuration's successful runs that have one.
inline std::vector<double> run_values(const ConfigurationRow& row,
                                      const std::function<std::optional<double>(const PointMetrics&)>& value) {
  std::vector<double> values;
  for (const int r : row.stats().runs) {
    const Run& run = row.set->runs()[static_cast<std::size_t>(r)];
    if (!run.metrics) continue;
    if (const auto found = value(*run.metrics)) values.push_back(*found);
  }
  return values;
}

inline std::vector<const Run*> run_rows(const ResultSet& set) {
  std::vector<const Run*> rows;
  for (const auto& run : set.runs()) rows.push_back(&run);
  return rows;
}

inline std::vector<ConfigurationRow> configuration_rows(const ResultSet& set) {
  std::vector<ConfigurationRow> rows;
  for (std::size_t c = 0; c < set.configurations().size(); ++c) rows.push_back({&set, c});
  return rows;
}

// "iris_mlp", or "iris_mlp/blas" for a workload on its non-default engine.
inline std::string workload_label(const PointSettings& settings) {
  return settings.engine == "torch" ? settings.workload : settings.workload + "/" + settings.engine;
}

}  // namespace harness
