// The outputs of `harness check` on a report made by hand: exit statuses, JUnit, markdown,
// annotations and JSON.
#include "harness/check/check_outputs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace harness {
namespace {

CheckRow row(Verdict verdict, std::string metric, double change, std::string note = "") {
  CheckRow row;
  row.point = "p001-12345678";
  row.label = "comm ring";
  row.reference = "backend=allreduce";
  row.metric = std::move(metric);
  row.size = "4 KiB";
  row.bytes = 4096;
  row.unit = "us";
  row.limits = {0.1, 0.5};
  row.baseline = 4.0;
  row.current = 4.0 * (1 + change);
  row.change = change;
  row.change_low = change - 0.05;
  row.change_high = change + 0.05;
  row.current_repeats = row.baseline_repeats = 5;
  row.verdict = verdict;
  row.note = std::move(note);
  return row;
}

CheckReport report_of(std::vector<CheckRow> rows, bool strict = false) {
  CheckReport report;
  report.mode = "against";
  report.current_dir = "results/ci-comm/1";
  report.against = {{"backend", "allreduce"}};
  report.strict = strict;
  report.rows = std::move(rows);
  sort_rows(report.rows);
  return report;
}

TEST(CheckOutputs, ExitStatusIsRegressionThenUnderStrictMissingThenInconclusive) {
  EXPECT_EQ(report_of({row(Verdict::kPass, "busbw", 0.01)}).exit_status(), kCheckPass);
  EXPECT_EQ(report_of({row(Verdict::kInconclusive, "busbw", 0.2), row(Verdict::kMissing, "all", 0)}).exit_status(),
            kCheckPass);
  EXPECT_EQ(report_of({row(Verdict::kInconclusive, "busbw", 0.2)}, true).exit_status(), kCheckInconclusive);
  EXPECT_EQ(report_of({row(Verdict::kInconclusive, "busbw", 0.2), row(Verdict::kNotComparable, "all", 0)}, true)
                .exit_status(),
            kCheckMissing);
  EXPECT_EQ(report_of({row(Verdict::kMissing, "all", 0), row(Verdict::kRegression, "reduce_time", 0.3)}, true)
                .exit_status(),
            kCheckRegression);
}

TEST(CheckOutputs, RegressionsComeFirst) {
  const CheckReport report = report_of({row(Verdict::kPass, "busbw", 0), row(Verdict::kImproved, "busbw", -0.3),
                                        row(Verdict::kRegression, "reduce_time", 0.3)});
  EXPECT_EQ(report.rows.front().verdict, Verdict::kRegression);
  const std::string console = format_check_console(report);
  EXPECT_LT(console.find("REGRESSION"), console.find("IMPROVED"));
  EXPECT_NE(console.find("+30.0%"), std::string::npos) << console;
  EXPECT_NE(console.find("[+25.0%, +35.0%]"), std::string::npos) << console;
}

TEST(CheckOutputs, JunitHasACasePerRowWithFailuresAndSkipsAndEscapesText) {
  const CheckReport report = report_of({row(Verdict::kRegression, "reduce_time", 0.3, "a < b & \"c\""),
                                        row(Verdict::kInconclusive, "busbw", -0.2), row(Verdict::kPass, "busbw", 0)});
  const std::string xml = check_junit_xml(report);
  EXPECT_NE(xml.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("a &lt; b &amp; &quot;c&quot;"), std::string::npos) << xml;
  EXPECT_EQ(xml.find("a < b"), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"REGRESSION: p001-12345678 comm ring vs backend=allreduce: reduce_time @ 4 KiB; "
                     "baseline 4.000 us, current 5.200 us, change +30.0% (95% interval +25.0% to +35.0%), threshold "
                     "10.0%"),
            std::string::npos)
      << xml;
  // Numbers that would print as exponents or nan elsewhere are plain decimals or n/a.
  CheckRow odd = row(Verdict::kInconclusive, "busbw", 0);
  odd.baseline = 1e-7;
  odd.current = std::nan("");
  odd.change = std::numeric_limits<double>::infinity();
  odd.change_low.reset();
  const std::string odd_xml = check_junit_xml(report_of({odd}));
  for (const char* bad : {"nan", "inf", "e-0", "e+", "e-1"}) EXPECT_EQ(odd_xml.find(bad), std::string::npos) << bad << odd_xml;
  EXPECT_NE(odd_xml.find("baseline 0.000000100 us, current n/a us, change n/a"), std::string::npos) << odd_xml;
}

TEST(CheckOutputs, MarkdownIsCutBelowItsLimitKeepingTheRegressions) {
  std::vector<CheckRow> rows;
  for (int i = 0; i < 5000; ++i) rows.push_back(row(Verdict::kPass, "busbw", 0.01, "a | b"));
  rows.push_back(row(Verdict::kRegression, "reduce_time", 0.5));
  const CheckReport report = report_of(std::move(rows));
  const std::string markdown = check_markdown(report, 100000);
  EXPECT_LT(markdown.size(), 100000U);
  EXPECT_EQ(markdown.rfind("## harness check: regression\n", 0), 0U);
  EXPECT_NE(markdown.find("| REGRESSION |"), std::string::npos);
  EXPECT_NE(markdown.find("a \\| b"), std::string::npos);
  EXPECT_NE(markdown.find("more row(s) left out to stay below 100000 bytes"), std::string::npos);
  EXPECT_EQ(check_markdown(report).find("left out"), std::string::npos);  // the default limit holds them all
  // The heading says what the exit status says: under --strict, a row not compared is no pass.
  const CheckReport strict = report_of({row(Verdict::kPass, "busbw", 0), row(Verdict::kNotComparable, "all", 0)}, true);
  EXPECT_EQ(check_markdown(strict).rfind("## harness check: not everything compared (missing, failing or not comparable)\n", 0),
            0U);
  EXPECT_EQ(check_markdown(report_of({row(Verdict::kPass, "busbw", 0)}, true)).rfind("## harness check: no regression\n", 0),
            0U);
}

TEST(CheckOutputs, AnnotationsAreErrorsForRegressionsAndWarningsForTheUndecided) {
  const CheckReport report = report_of({row(Verdict::kRegression, "reduce_time", 0.3, "50% slower\nreally"),
                                        row(Verdict::kMissing, "all", 0), row(Verdict::kPass, "busbw", 0)});
  const auto lines = github_annotations(report);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(lines[0].rfind("::error title=harness check REGRESSION::p001-12345678 comm ring vs backend=allreduce: "
                           "reduce_time @ 4 KiB +30.0%25",
                           0),
            0U)
      << lines[0];
  EXPECT_NE(lines[0].find("50%25 slower%0Areally"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("::warning title=harness check MISSING::", 0), 0U) << lines[1];
}

TEST(CheckOutputs, JsonHasItsSchemaVersionCountsAndRows) {
  const Json json = check_report_json(report_of({row(Verdict::kRegression, "reduce_time", 0.3)}, true));
  EXPECT_EQ(json["schema_version"], kCheckJsonSchemaVersion);
  EXPECT_EQ(json["exit_status"], 1);
  EXPECT_EQ(json["counts"]["REGRESSION"], 1);
  EXPECT_EQ(json["rows"][0]["metric"], "reduce_time");
  EXPECT_EQ(json["rows"][0]["better"], "lower");
  EXPECT_DOUBLE_EQ(json["rows"][0]["interval"][1].get<double>(), 0.35);
  EXPECT_EQ(json["against"]["backend"], "allreduce");
  EXPECT_TRUE(json["baseline"].is_null());
}

}  // namespace
}  // namespace harness
