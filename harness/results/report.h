// What a results directory shows, made from its result set alone: the console table, summary.csv
// (and stats.csv for training) and the plots. One strategy per kind: the kinds' measurements and
// their tables and plots differ, the rest (loading, writing, drawing) is shared.
#pragma once

#include <exception>
#include <map>
#include <string>
#include <vector>

#include "harness/results/result_set.h"

namespace harness {

class KindReport {
 public:
  virtual ~KindReport() = default;
  // Why a point that ran to the end still failed (a benchmark whose sums are wrong), or "".
  virtual std::string failure(const Measurements& measurements) const = 0;
  // What its progress line should add about a successful point (diverged training), or "".
  virtual std::string remark(const Measurements& measurements) const = 0;
  // File name in the results directory -> contents (summary.csv, stats.csv).
  virtual std::map<std::string, std::string> tables(const ResultSet& set) const = 0;
  // The console table: a line per run, or per configuration when points repeat.
  virtual std::string console_table(const ResultSet& set) const = 0;
  // Plot name (plots/<name>.gp) -> the data it plots.
  virtual std::map<std::string, std::string> plot_data(const ResultSet& set) const = 0;
};

const KindReport& report_for(Kind kind);

struct WrittenReports {
  std::vector<std::string> tables;  // paths
  std::vector<std::string> images;  // paths
  std::string console;              // the table, to print
  std::string html;                 // report.html (html_report.h)
  // Why no plot was drawn ("" when they were): gnuplot is not on PATH. The records, tables and
  // report stand without plots, so a run is not failed for it; `harness plot DIR` draws them later.
  std::string plots_not_drawn;
  // The plots gnuplot failed on ("loss: gnuplot loss.gp failed ..."): the others are drawn, and the
  // failed ones' earlier images removed.
  std::vector<std::string> plots_failed;
  // Why report.html could not be written (an Error), kept so that what was written and the plots
  // that failed are still said before it: print_reports throws it last.
  std::exception_ptr html_failure;
};

// The console table with the notes under it (the explanations of oversubscription, one rank, GPUs),
// as `run` and `plot` print it and report.html shows it.
std::string console_text(const ResultSet& set);

// Writes the tables, draws the plots (with the timeline of a traced point) and writes report.html
// of `set` into `directory`; without gnuplot on PATH, all but the plots (plots_not_drawn says so).
// Plots this run does not draw (a point's records gone, the timeline not asked for) are removed,
// so that none passes for this run's. Throws Error when a table or plot cannot be written; one for
// report.html is kept in html_failure.
WrittenReports write_reports(const ResultSet& set, const ResultsDirectory& directory);

}  // namespace harness
