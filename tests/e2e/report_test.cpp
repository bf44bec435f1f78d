// What `harness run` and `harness plot` leave in plots/ and report.html: only this run's plots,
// every plot that can be drawn when one cannot, and a page whose element ids are its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "harness/common/process.h"
#include "e2e_helpers.h"

namespace harness::e2e {
namespace {

// Every id="..." or id='...' of the page and how often it occurs.
std::map<std::string, int> element_ids(const std::string& html) {
  static const std::regex id(R"re(\sid=["']([^"']+)["'])re");
  std::map<std::string, int> ids;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id); it != std::sregex_iterator(); ++it) {
    ++ids[(*it)[1].str()];
  }
  return ids;
}

TEST(Report, PlotsAreThisRunsOnlyAndAPlotGnuplotFailsOnIsSaidWhileTheOthersAreDrawn) {
  const fs::path dir = scratch("report_plots");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "plots",
    "settings": {"workload": "iris_mlp", "epochs": 2, "lr": 0.5, "batch_size": 4},
    "sweep": {"ranks": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log");
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  ASSERT_TRUE(fs::exists(out / "plots" / "karp_flatt.svg"));  // needs two rank counts
  // Every inlined SVG's ids are made its own, gnuplot's '-quoted marker ids too.
  for (const auto& [id, count] : element_ids(read_text(out / "report.html"))) EXPECT_EQ(count, 1) << id;
  // A configuration's own final loss and accuracy, the baseline's too.
  for (const auto& row : read_csv(out / "stats.csv")) {
    EXPECT_FALSE(row.at("final_loss_median").empty()) << row.at("ranks");
    EXPECT_FALSE(row.at("accuracy_median").empty()) << row.at("ranks");
  }

  // The 2-rank record gone: the plots that only it made are gone too, from plots/ and the page.
  for (const auto& entry : fs::directory_iterator(out / "points")) {
    if (read_text(entry.path()).find("\"ranks\": 2") != std::string::npos ||
        read_text(entry.path()).find("\"ranks\":2") != std::string::npos) {
      fs::remove(entry.path());
    }
  }
  // And gnuplot fails on the loss plot only.
  const fs::path fake_bin = dir / "bin";
  fs::create_directories(fake_bin);
  std::ofstream(fake_bin / "gnuplot") << "#!/bin/sh\n"
                                      << "for last; do :; done\n"
                                      << "[ \"$last\" = loss.gp ] && { echo 'loss.gp: all points y value undefined!' >&2; exit 1; }\n"
                                      << "exec " << find_program("gnuplot") << " \"$@\"\n";
  fs::permissions(fake_bin / "gnuplot", fs::perms::owner_all);
  const HarnessRun plot = run_harness({"plot", out.string()}, dir / "plot.log",
                                      {{"PATH", fake_bin.string() + ":" + std::getenv("PATH")}});
  EXPECT_EQ(plot.outcome.exit_code, 1) << joined(plot.output);  // drawing was asked for, and not all was done
  EXPECT_NE(joined(plot.output).find("harness: warning: plot not drawn: loss: gnuplot loss.gp failed"),
            std::string::npos)
      << joined(plot.output);
  EXPECT_FALSE(fs::exists(out / "plots" / "karp_flatt.svg"));
  EXPECT_FALSE(fs::exists(out / "plots" / "loss.svg"));  // the earlier one would pass for this run's
  EXPECT_TRUE(fs::exists(out / "plots" / "accuracy.svg"));
  const std::string page = read_text(out / "report.html");
  EXPECT_NE(page.find("1 point(s) with a record"), std::string::npos);  // rewritten all the same
  EXPECT_EQ(page.find("id=\"plot-karp_flatt\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"plot-loss\""), std::string::npos);
  EXPECT_NE(page.find("id=\"plot-accuracy\""), std::string::npos);
  EXPECT_NE(page.find("Not drawn: loss: gnuplot loss.gp failed"), std::string::npos);

  // report.html cannot be written (a folder is in its place): the failed plot is still said, then why.
  fs::remove(out / "report.html");
  fs::create_directories(out / "report.html" / "in_the_way");
  const HarnessRun blocked = run_harness({"plot", out.string()}, dir / "blocked.log",
                                         {{"PATH", fake_bin.string() + ":" + std::getenv("PATH")}});
  EXPECT_NE(blocked.outcome.exit_code, 0) << joined(blocked.output);
  const std::string said = joined(blocked.output);
  const auto plot_warning = said.find("harness: warning: plot not drawn: loss: gnuplot loss.gp failed");
  const auto page_error = said.rfind("report.html");
  EXPECT_NE(plot_warning, std::string::npos) << said;
  EXPECT_NE(page_error, std::string::npos) << said;
  EXPECT_LT(plot_warning, page_error) << said;
}

TEST(Report, OneRanksCommBenchmarkHasNoShareOfAMemoryLimit) {  // nothing moves: no limit to be a share of
  const fs::path dir = scratch("report_comm_one_rank");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "one", "settings": {"kind": "comm", "ranks": 1, "comm_max_bytes": 4096, "comm_iterations": 2}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log");
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) EXPECT_EQ(row.at("memory_limit_fraction"), "") << row.at("bytes");
}

}  // namespace
}  // namespace harness::e2e
