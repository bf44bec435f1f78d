// The outcome of `harness check`: one row per configuration and metric (and message size), what
// it was compared with, the verdict, and the exit status that follows. Plain data that every
// output format (console, JSON, JUnit, markdown, CI annotations) reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/check/check_statistics.h"
#include "harness/common/json.h"

namespace harness {

// The exit statuses of `harness check` (docs/ci-gate.md).
inline constexpr int kCheckPass = 0;
inline constexpr int kCheckRegression = 1;  // a regression, or a point that newly fails
inline constexpr int kCheckUsage = 2;       // bad arguments or input
inline constexpr int kCheckInconclusive = 3;  // --strict: too few repeats or an interval too wide
inline constexpr int kCheckMissing = 4;       // --strict: a point missing, failing on both sides, not comparable

struct CheckRow {
  std::string point;      // the current run's id of the configuration's first repeat ("p001-65193b3a")
  std::string label;      // "comm ring ranks=2"
  std::string reference;  // what it was compared with: "baseline", "backend=allreduce", ...
  Json settings;          // the configuration's settings, as records store them
  std::string metric;     // a name from the metric table, or "status" for a point that failed
  std::string size;       // message size of a communication benchmark metric ("1 MiB"), else ""
  int64_t bytes = 0;
  std::string unit;
  bool lower_is_better = true;
  MetricLimits limits;
  std::optional<double> baseline;  // geometric means over repeats (with --against and --baseline:
  std::optional<double> current;   // the current reference times the baseline's ratio)
  std::optional<double> change;    // relative: 0.12 = 12% higher than the baseline
  std::optional<double> change_low;   // 95% interval of `change`
  std::optional<double> change_high;
  int current_repeats = 0;
  int baseline_repeats = 0;
  bool paired = false;
  Verdict verdict = Verdict::kPass;
  std::string note;
};

struct CheckReport {
  std::string mode;  // "baseline", "against" or "against+baseline"
  std::string current_dir;
  std::string baseline_dir;   // "" without --baseline
  Json against = Json::object();
  bool strict = false;
  std::vector<CheckRow> rows;  // regressions first, then inconclusive, missing, ..., passes
  // Facts about the whole comparison that no row carries, one line each: machines compared
  // under --allow-other-machine, a baseline that does not say which machine it ran on.
  std::vector<std::string> notes;

  int count(Verdict verdict) const;
  // 1 on a regression; under --strict 4 for missing, failing-on-both or not comparable points,
  // then 3 for inconclusive ones; otherwise 0.
  int exit_status() const;
};

// Orders rows: regressions first, then inconclusive, missing, not comparable, failed, improved,
// pass; within a verdict in point, metric and size order.
void sort_rows(std::vector<CheckRow>& rows);

// "point label metric size", the name of a row in messages and test cases.
std::string row_title(const CheckRow& row);

// "+12.3%", "-4.0%"; "n/a" when not finite.
std::string format_change(double change);
// "12.35", "0.0123": enough significant digits for the unit, always a plain decimal; "n/a" when
// not finite.
std::string format_value(double value);

}  // namespace harness
