#include <fmt/format.h>

#include "harness/check/check_outputs.h"

namespace harness {
namespace {

// Text for an XML attribute or element: the five entities, and no control characters (XML 1.0
// cannot carry most of them, even escaped).
std::string xml_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string describe(const CheckRow& row) {
  std::string text = fmt::format("{}: {}", verdict_name(row.verdict), row_title(row));
  if (row.baseline && row.current) {
    text += fmt::format("; baseline {} {}, current {} {}", format_value(*row.baseline), row.unit,
                        format_value(*row.current), row.unit);
  }
  if (row.change) text += fmt::format(", change {}", format_change(*row.change));
  if (row.change_low && row.change_high) {
    text += fmt::format(" (95% interval {} to {})", format_change(*row.change_low), format_change(*row.change_high));
  }
  if (row.change) text += fmt::format(", threshold {:.1f}%", row.limits.threshold * 100);
  if (!row.note.empty()) text += "; " + row.note;
  return text;
}

}  // namespace

std::string check_junit_xml(const CheckReport& report) {
  const int failures = report.count(Verdict::kRegression);
  const int skipped = report.count(Verdict::kInconclusive) + report.count(Verdict::kMissing) +
                      report.count(Verdict::kFailed) + report.count(Verdict::kNotComparable);
  const int tests = static_cast<int>(report.rows.size());
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites name=\"harness check\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                     tests, failures, skipped);
  xml += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"0\">\n",
                     xml_text("harness check " + report.current_dir), tests, failures, skipped);
  for (const CheckRow& row : report.rows) {
    const std::string name = row.size.empty() ? row.metric : row.metric + " @ " + row.size;
    const std::string classname = row.point + " " + row.label + (row.reference == "baseline" ? "" : " vs " + row.reference);
    xml += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\"", xml_text(classname), xml_text(name));
    switch (row.verdict) {
      case Verdict::kRegression:
        xml += fmt::format(">\n      <failure message=\"{0}\" type=\"regression\">{0}</failure>\n    </testcase>\n",
                           xml_text(describe(row)));
        break;
      case Verdict::kInconclusive:
      case Verdict::kMissing:
      case Verdict::kFailed:
      case Verdict::kNotComparable:
        xml += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_text(describe(row)));
        break;
      case Verdict::kImproved:
      case Verdict::kPass:
        xml += fmt::format(">\n      <system-out>{}</system-out>\n    </testcase>\n", xml_text(describe(row)));
        break;
    }
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace harness
