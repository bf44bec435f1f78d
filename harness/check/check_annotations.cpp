#include <fmt/format.h>

#include "harness/check/check_outputs.h"

namespace harness {
namespace {

// GitHub's workflow commands end a message at a line break and read % as an escape.
std::string escape_data(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else {
      out += c;
    }
  }
  return out;
}

// In a property (title=...), also the separators of properties.
std::string escape_property(const std::string& text) {
  std::string out;
  for (const char c : escape_data(text)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> github_annotations(const CheckReport& report) {
  std::vector<std::string> lines;
  for (const CheckRow& row : report.rows) {
    if (row.verdict == Verdict::kPass || row.verdict == Verdict::kImproved) continue;
    const char* level = row.verdict == Verdict::kRegression ? "error" : "warning";
    std::string message = row_title(row);
    // fmt, not `" " + string`: GCC 12 warns falsely (-Wrestrict) about that operator+ inlined here.
    if (row.change) message += fmt::format(" {}", format_change(*row.change));
    if (row.change_low && row.change_high) {
      message += fmt::format(" (95% interval {} to {})", format_change(*row.change_low), format_change(*row.change_high));
    }
    if (!row.note.empty()) message += "; " + row.note;
    lines.push_back(fmt::format("::{} title={}::{}", level,
                                escape_property("harness check " + verdict_name(row.verdict)), escape_data(message)));
  }
  return lines;
}

}  // namespace harness
