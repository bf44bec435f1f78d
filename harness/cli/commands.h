// The subcommands of `harness`. Each returns the process exit status:
// 0 success, 1 a point failed or the harness hit a runtime error, 2 bad input (nothing
// launched), 3 (status) points still in flight or not yet submitted, 130 interrupted by Ctrl-C
// (completed points and the summary so far are kept).
#pragma once

#include <string>
#include <vector>

#include "harness/cli/study_loading.h"

namespace harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInProgress = 3;
inline constexpr int kExitInterrupted = 130;

class Error;
// Prints "harness: <what>" on stderr and returns its exit status: kExitBadInput for a ConfigError
// (the input is wrong; nothing ran), kExitFailure otherwise.
int report_error(const Error& error);

struct RunOptions {
  std::string experiment_path;
  std::string out_dir;                    // "" = results/<name>/<timestamp>
  // --launcher, --set, --sweep and --build: what the command line changes in the experiment.
  StudyChanges changes;
  // Run every point, even those with a completed record in out_dir (default: keep those and run
  // only the failed and missing ones).
  bool fresh = false;
  // Validate and print what would run (every point's command, the counts, an estimate); start
  // nothing and create no results directory.
  bool dry_run = false;
  // Keep also timed-out, out-of-memory and cancelled points (running them unchanged would end the
  // same way); run again only the failed, lost, retryable and missing ones.
  bool retry_failed = false;
  // Submit and return (a cluster launcher); `harness status DIR` follows the jobs.
  bool detach = false;
  std::vector<std::string> command_line;  // for provenance
};

int run_command(const RunOptions& options);
// The points, their commands and the estimate, as `run --dry-run` prints them (`out_dir` as
// --out, "" = the default), after run's checks of --out and --detach.
int plan_command(const std::string& experiment_path, const std::string& out_dir = "",
                 const StudyChanges& changes = {}, bool detach = false);
// Rebuilds summary.csv, stats.csv and every plot of a results directory from its records and
// its copy of the experiment file, without running anything.
int plot_command(const std::string& results_dir);

// Collects the records of a results directory's jobs that have ended (a cluster's jobs outlive
// the harness that submitted them) and says where every point stands; when all are in, rebuilds
// the summary and plots. Exit 0 all ok, 1 some failed, 3 some still in flight or not submitted.
int status_command(const std::string& results_dir, const std::vector<std::string>& command_line);
// Records what has ended, then cancels every job of the directory still in flight.
int cancel_command(const std::string& results_dir, const std::vector<std::string>& command_line);

// `harness check`: exit 0 pass, 1 regression or newly failing point, 2 bad input, 3 (--strict)
// inconclusive, 4 (--strict) missing, failing on both sides or not comparable (check/check_report.h).
struct CheckCommandOptions {
  std::string current_dir;
  std::string baseline_dir;  // "" = none
  std::string against;       // JSON text; "" = the experiment's check.against, if any
  bool strict = false;
  bool allow_other_machine = false;  // compare records of different machines (check_options.h)
  bool allow_other_mpi = false;      // compare records of different MPI libraries (check_options.h)
  std::string json_path, junit_path, markdown_path;
  std::vector<std::string> thresholds;  // METRIC=VALUE
  std::vector<std::string> floors;      // METRIC=VALUE
  std::string metrics;                  // "" = all
  std::vector<std::string> expect_commits;  // BUILD=COMMIT (check/expected_commits.h)
};
int check_command(const CheckCommandOptions& options);

// `harness model COMM_RUN [--predict TRAIN_RUN] [--ranks ...]` (harness/model/).
struct ModelCommandOptions {
  std::string comm_dir;
  std::string train_dir;   // "" = fit only
  std::string ranks;  // comma-separated rank counts; "" = 1, 2, 4, ..., 1024
};
int model_command(const ModelCommandOptions& options);

// Prints a results directory's console table and where its tables and plots are (run and plot);
// then throws the Error that kept report.html from being written, if one did.
struct WrittenReports;
class ResultsDirectory;
void print_reports(const WrittenReports& written, const ResultsDirectory& directory);

}  // namespace harness
