// The results directory and the records in it. Layout (see results/README.md):
//   DIR/experiment.json        the experiment file as run
//   DIR/points/<id>.json       one record per point (status, settings, provenance, measurements)
//   DIR/logs/<id>.log          everything the point's mpirun and ranks printed
//   DIR/summary.csv            one row per point, with cross-point metrics
//   DIR/plots/                 speedup, efficiency, throughput, loss (.png, .svg, .gp, .dat)
// Every file is written to a temporary name and renamed, so a reader never sees half a file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/common/files.h"
#include "harness/study/experiment.h"
#include "harness/launch/launcher.h"
#include "harness/results/metrics.h"

namespace harness {

inline constexpr int kRecordSchemaVersion = 1;

class ResultsLayout {
 public:
  explicit ResultsLayout(std::string directory) : directory_(std::move(directory)) {}
  const std::string& directory() const { return directory_; }
  std::string experiment_copy() const { return directory_ + "/experiment.json"; }
  std::string points_dir() const { return directory_ + "/points"; }
  std::string logs_dir() const { return directory_ + "/logs"; }
  std::string plots_dir() const { return directory_ + "/plots"; }
  std::string summary_csv() const { return directory_ + "/summary.csv"; }
  std::string stats_csv() const { return directory_ + "/stats.csv"; }
  std::string point_record(const std::string& id) const { return points_dir() + "/" + id + ".json"; }
  std::string point_log(const std::string& id) const { return logs_dir() + "/" + id + ".log"; }
  // Where rank 0 writes its measurements; the run command folds them into the point record.
  std::string worker_output(const std::string& id) const {
    return logs_dir() + "/" + id + ".measurements.json";
  }
  // Creates the directories. Throws ConfigError naming the directory when it cannot.
  void create() const;

 private:
  std::string directory_;
};


// Facts about this invocation of the harness, stored in every record.
Json collect_provenance(const std::vector<std::string>& command_line);
std::string utc_timestamp();  // 2026-11-22T02:43:27Z

// The record of one point. `measurements` is what rank 0 wrote (null when the point failed).
Json make_point_record(const std::string& experiment_name, const Point& point,
                       const LaunchOutcome& launch, const Json& provenance,
                       const Json& measurements, const std::string& failure_reason,
                       const std::vector<std::string>& log_tail);

// Resuming: finds a completed ("ok") record of `point` (same settings hash) in the layout, under
// any index, and makes it this point's record (renaming it and its log when the sweep's order
// changed). Returns false when there is none; failed records never count.
bool adopt_completed_record(const ResultsLayout& layout, const Point& point);

// The ids of the records under DIR/points, keyed by "<settings as JSON>|<repeat>". Throws Error
// naming the first file there that is not a readable record.
std::map<std::string, std::string> stored_record_ids(const ResultsLayout& layout);

// One point as summary.csv and the plots see it, read back from its record.
struct SummaryRow {
  int index = 0;
  int repeat = 0;
  std::string id;
  PointSettings settings;
  bool ok = false;
  std::string reason;                  // why it failed
  int64_t train_samples = 0;           // samples actually used (dataset_size resolved)
  std::optional<PointMetrics> metrics;  // kind "train"
  std::optional<Scaling> scaling;
  Json epochs = Json::array();         // per-epoch loss and accuracy
  std::vector<MessageSizeMetrics> message_sizes;  // kind "comm"
};

// Reads the records under DIR/points, in point order, and computes the cross-point metrics
// among them. With `only_ids`, records of other points (an earlier experiment written into the
// same directory) are ignored, also as baselines.
// `baseline` is the experiment's "baseline" (see experiment.h; empty = fewest ranks).
std::vector<SummaryRow> load_summary(const ResultsLayout& layout,
                                     const std::vector<std::string>& only_ids = {},
                                     const Json& baseline = Json::object());
// The rows grouped by configuration (settings without the repeat), with medians, bootstrap
// intervals, speedup, efficiency and the Karp-Flatt serial fraction (training points only).
std::vector<ConfigurationStats> summary_stats(const std::vector<SummaryRow>& rows,
                                              const Json& baseline = Json::object());
// The console table of repeated experiments: one row per configuration, medians [95% interval].
std::string stats_table(const std::vector<SummaryRow>& rows,
                        const std::vector<ConfigurationStats>& stats);
// stats.csv: one row per configuration.
std::string stats_csv(const std::vector<SummaryRow>& rows,
                      const std::vector<ConfigurationStats>& stats);
// summary.csv and a console table with a units row (like nccl-tests), for training points; for
// communication benchmark points (kind "comm") one row per point and message size.
std::string summary_csv(const std::vector<SummaryRow>& rows);
std::string summary_table(const std::vector<SummaryRow>& rows);
std::string comm_summary_csv(const std::vector<SummaryRow>& rows);
std::string comm_summary_table(const std::vector<SummaryRow>& rows);

}  // namespace harness
