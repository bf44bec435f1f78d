#include "harness/check/check_outputs.h"
#include "harness/common/version.h"

namespace harness {
namespace {

Json number_or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

}  // namespace

Json check_report_json(const CheckReport& report) {
  Json rows = Json::array();
  for (const CheckRow& row : report.rows) {
    rows.push_back({
        {"verdict", verdict_name(row.verdict)},
        {"point", row.point},
        {"configuration", row.label},
        {"settings", row.settings},
        {"against", row.reference},
        {"metric", row.metric},
        {"size", row.size},
        {"bytes", row.bytes},
        {"unit", row.unit},
        {"better", row.lower_is_better ? "lower" : "higher"},
        {"threshold", row.limits.threshold},
        {"floor", row.limits.floor},
        {"baseline", number_or_null(row.baseline)},
        {"current", number_or_null(row.current)},
        {"change", number_or_null(row.change)},
        {"interval", row.change_low && row.change_high ? Json::array({*row.change_low, *row.change_high}) : Json(nullptr)},
        {"repeats", {{"current", row.current_repeats}, {"baseline", row.baseline_repeats}}},
        {"paired", row.paired},
        {"note", row.note},
    });
  }
  Json counts = Json::object();
  for (const Verdict verdict : {Verdict::kRegression, Verdict::kInconclusive, Verdict::kMissing, Verdict::kFailed,
                                Verdict::kNotComparable, Verdict::kImproved, Verdict::kPass}) {
    counts[verdict_name(verdict)] = report.count(verdict);
  }
  return {
      {"schema_version", kCheckJsonSchemaVersion},
      {"tool", {{"name", "harness check"}, {"version", kHarnessVersion}, {"git_commit", git_commit()}}},
      {"mode", report.mode},
      {"current", report.current_dir},
      {"baseline", report.baseline_dir.empty() ? Json(nullptr) : Json(report.baseline_dir)},
      {"against", report.against.empty() ? Json(nullptr) : report.against},
      {"strict", report.strict},
      {"exit_status", report.exit_status()},
      {"counts", counts},
      {"notes", report.notes},
      {"rows", rows},
  };
}

}  // namespace harness
