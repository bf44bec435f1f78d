#include <fmt/format.h>

#include "harness/check/check_outputs.h"

namespace harness {
namespace {

// Text in a table cell, taken as written: pipes and line breaks would end the cell or the row,
// backticks start code, and < > would be read as HTML.
std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '|': out += "\\|"; break;
      case '`': out += "\\`"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\n':
      case '\r': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

std::string table_row(const CheckRow& row) {
  const auto value = [](const std::optional<double>& v) { return v ? format_value(*v) : std::string("-"); };
  const std::string interval = row.change_low && row.change_high ? fmt::format("{} … {}", format_change(*row.change_low),
                                                                               format_change(*row.change_high))
                                                                 : "-";
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", verdict_name(row.verdict),
                     cell(row.point + " " + row.label), cell(row.reference), cell(row.metric),
                     cell(row.size), value(row.baseline), value(row.current), row.change ? format_change(*row.change) : "-",
                     interval, cell(row.note));
}

}  // namespace

std::string check_markdown(const CheckReport& report, std::size_t max_bytes) {
  const int regressions = report.count(Verdict::kRegression);
  // The heading says what the exit status says (with --strict, a pass needs every row compared).
  const int status = report.exit_status();
  const char* verdict = status == kCheckRegression     ? "regression"
                        : status == kCheckMissing      ? "not everything compared (missing, failing or not comparable)"
                        : status == kCheckInconclusive ? "inconclusive"
                                                       : "no regression";
  std::string text = fmt::format("## harness check: {}\n\n", verdict);
  text += fmt::format("{}{}{} (exit status {})\n\n", cell(report.current_dir),
                      report.baseline_dir.empty() ? "" : fmt::format(" against the baseline {}", cell(report.baseline_dir)),
                      report.against.empty() ? "" : fmt::format(", each configuration against its {}", cell(report.against.dump())),
                      report.exit_status());
  text += fmt::format("**{}** regression(s), {} inconclusive, {} missing, {} failing on both sides, {} not comparable, "
                      "{} improved, {} pass\n\n",
                      regressions, report.count(Verdict::kInconclusive), report.count(Verdict::kMissing),
                      report.count(Verdict::kFailed), report.count(Verdict::kNotComparable),
                      report.count(Verdict::kImproved), report.count(Verdict::kPass));
  for (const auto& line : report.notes) text += fmt::format("Note: {}\n\n", cell(line));
  text += "| verdict | point | against | metric | size | baseline | current | change | 95% interval | note |\n";
  text += "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n";
  // Rows are sorted regressions first, so a cut leaves out passes before anything that matters.
  std::size_t written = 0;
  const std::string cut_reserve(200, ' ');
  for (const CheckRow& row : report.rows) {
    const std::string line = table_row(row);
    if (text.size() + line.size() + cut_reserve.size() > max_bytes) break;
    text += line;
    ++written;
  }
  if (written < report.rows.size()) {
    text += fmt::format("\n{} more row(s) left out to stay below {} bytes; the JSON output (--json) has them all.\n",
                        report.rows.size() - written, max_bytes);
  }
  return text;
}

}  // namespace harness
