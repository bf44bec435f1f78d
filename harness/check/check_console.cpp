#include <algorithm>

#include <fmt/format.h>

#include "harness/check/check_outputs.h"
#include "harness/results/table.h"

namespace harness {
namespace {

std::string value_or_dash(const std::optional<double>& value) { return value ? format_value(*value) : "-"; }

std::string interval_text(const CheckRow& row) {
  if (!row.change_low || !row.change_high) return "-";
  return fmt::format("[{}, {}]", format_change(*row.change_low), format_change(*row.change_high));
}

// A column as wide as its longest value, at least `least`: labels of many swept settings stay in
// their column.
int width_of(const CheckReport& report, int least, std::string CheckRow::*field) {
  std::size_t width = static_cast<std::size_t>(least);
  for (const CheckRow& row : report.rows) width = std::max(width, (row.*field).size());
  return static_cast<int>(width);
}

}  // namespace

std::string format_check_console(const CheckReport& report) {
  const std::vector<ConsoleColumn<CheckRow>> columns = {
      {"verdict", "", 14, true, [](const CheckRow& row) { return verdict_name(row.verdict); }},
      {"point", "", 13, true, [](const CheckRow& row) { return row.point; }},
      {"configuration", "", width_of(report, 28, &CheckRow::label), true, [](const CheckRow& row) { return row.label; }},
      {"against", "", width_of(report, 17, &CheckRow::reference), true,
       [](const CheckRow& row) { return row.reference; }},
      {"metric", "", 13, true, [](const CheckRow& row) { return row.metric; }},
      {"size", "", 7, false, [](const CheckRow& row) { return row.size; }},
      {"baseline", "", 10, false, [](const CheckRow& row) { return value_or_dash(row.baseline); }},
      {"current", "", 10, false, [](const CheckRow& row) { return value_or_dash(row.current); }},
      {"unit", "", 9, true, [](const CheckRow& row) { return row.unit; }},
      {"change", "", 7, false,
       [](const CheckRow& row) { return row.change ? format_change(*row.change) : std::string("-"); }},
      {"95% interval", "of change", 18, false, interval_text},
      {"n", "cur/base", 9, false,
       [](const CheckRow& row) {
         return row.current_repeats + row.baseline_repeats == 0
                    ? std::string("-")
                    : fmt::format("{}/{}{}", row.current_repeats, row.baseline_repeats, row.paired ? "p" : "");
       }},
      {"note", "", 0, true, [](const CheckRow& row) { return row.note; }},
  };
  std::string out = fmt::format("harness check: {}{}{}\n", report.current_dir,
                                report.baseline_dir.empty() ? "" : " against the baseline " + report.baseline_dir,
                                report.against.empty() ? "" : ", each configuration against its " + report.against.dump());
  out += format_console_table(columns, report.rows);
  out += fmt::format("\n{} regression(s), {} inconclusive, {} missing, {} failing on both sides, {} not comparable, "
                     "{} improved, {} pass (n: repeats compared, p: paired by repeat)\n",
                     report.count(Verdict::kRegression), report.count(Verdict::kInconclusive),
                     report.count(Verdict::kMissing), report.count(Verdict::kFailed),
                     report.count(Verdict::kNotComparable), report.count(Verdict::kImproved),
                     report.count(Verdict::kPass));
  for (const auto& line : report.notes) {
    // Piece by piece: `"note: " + line` trips GCC 12's -Wrestrict false positive.
    out += "note: ";
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace harness
