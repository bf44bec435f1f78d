// What `harness check` compares: a table of metrics, each with the direction that is better, a
// default relative threshold, and an absolute floor below which a difference is ignored. A metric
// takes one value per repeat from a record's measurements (the median over the timed steps, or
// per message size for the communication benchmark), in the unit the table states.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/record.h"

namespace harness {

enum class Better { kLower, kHigher };

struct CheckMetric {
  std::string_view name;  // what --threshold, --floor, --metrics and the "check" block call it
  Kind kind;              // the kind of point it applies to
  std::string_view unit;  // of its values and of its floor
  Better better;
  double threshold;       // default: a relative change beyond this in the bad direction may regress
  double floor;           // default: absolute differences below this (in `unit`) are ignored
  std::string_view help;
};

// In the order reports list them.
const std::vector<CheckMetric>& check_metric_table();
// Throws ConfigError naming `where` and listing the valid names when `name` is unknown.
const CheckMetric& find_check_metric(std::string_view name, const std::string& where);

// One value of a metric from one record: for the communication benchmark one per message size
// (`bytes`, with `size` its label "1 MiB"), otherwise one (bytes 0, size "").
struct MetricValue {
  int64_t bytes = 0;
  std::string size;
  double value = 0;
};

// The metric's values in `measurements` (empty when it does not apply: another kind).
std::vector<MetricValue> metric_values(const CheckMetric& metric, const Measurements& measurements);

// "4 KiB", "1 MiB", "12 B".
std::string size_label(int64_t bytes);

}  // namespace harness
