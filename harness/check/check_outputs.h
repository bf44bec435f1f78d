// The outputs of `harness check`, one file each: the console table (regressions first), a JSON
// document (versioned), JUnit XML (one test case per point and metric), a markdown summary for a
// CI job page, and GitHub Actions annotation lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/check/check_report.h"
#include "harness/common/json.h"

namespace harness {

// check_console.cpp: the table, then a line of counts and what the exit status will say.
std::string format_check_console(const CheckReport& report);

// check_json.cpp. Raise when a field changes meaning or goes; adding fields keeps it.
inline constexpr int kCheckJsonSchemaVersion = 1;
Json check_report_json(const CheckReport& report);

// check_junit.cpp: <testsuites><testsuite name="harness check"><testcase classname=POINT
// name=METRIC>, <failure> for a regression, <skipped> for inconclusive, missing, failing on both
// sides or not comparable. Numbers are plain decimals.
std::string check_junit_xml(const CheckReport& report);

// check_markdown.cpp: counts, then a table of every row that is not a pass, then the passes,
// cut (with a line saying how many rows were left out) to stay below `max_bytes`.
inline constexpr std::size_t kMarkdownLimitBytes = 1000 * 1000;  // GitHub's job summary takes 1 MiB
std::string check_markdown(const CheckReport& report, std::size_t max_bytes = kMarkdownLimitBytes);

// check_annotations.cpp: "::error title=...::message" per regression, "::warning ..." per
// inconclusive, missing, failing or not comparable row (GitHub Actions reads them from stdout).
std::vector<std::string> github_annotations(const CheckReport& report);

}  // namespace harness
