#include "harness/results/result_set.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/results/report.h"
#include "harness/results/table.h"
#include "harness/results/train_report.h"
#include "point_record_of.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

ResultsDirectory fresh_directory(const std::string& name) { return fresh_results_directory("result_set_test_" + name); }

Experiment ranks_experiment(const std::string& ranks) {
  return parse_experiment(R"({"name": "exp", "settings": {"workload": "iris_mlp"},
                              "sweep": {"ranks": )" + ranks + "}}",
                          "exp.json");
}

// A record of `point`, written where `id` says (its own id unless the sweep moved it).
void write_record(const ResultsDirectory& directory, const Point& point, double time_s,
                  const std::string& failure = "", const std::string& id = "") {
  PointRecord record = ok_record_of(point);
  if (!id.empty()) record.id = id;
  if (!failure.empty()) record.status = PointStatus::kFailed;
  record.reason = failure;
  if (record.ok()) {
    Measurements measurements;
    TrainMeasurements train;
    train.train_samples = 120;
    train.samples_trained = 1200;
    train.train_time_s = time_s;
    train.steps.step_s = {0.01};
    train.steps.compute_s = {0.008};
    train.steps.comm_s = {0.002};
    train.steps.exposed_comm_s = {0.002};
    train.epochs = {{1, 0.3, 0.3, 0.5, time_s, 0.0, 120}, {2, 0.2, 0.2, 0.8, time_s, 0.0, 240}};
    train.sgd = SgdFacts{100, 4, 4 * point.settings.ranks, 0.01, 1};
    measurements.train = train;
    record.measurements = measurements;
  }
  write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
}

TEST(ResultSet, RunsInPointOrderWithScalingAndFailures) {
  const ResultsDirectory directory = fresh_directory("order");
  const Experiment experiment = ranks_experiment("[1, 2, 4]");
  const auto points = expand(experiment);
  write_record(directory, points[1], 2.5);  // written out of order on purpose
  write_record(directory, points[0], 4.0);
  write_record(directory, points[2], 0, "mpirun exit code 1");
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  ASSERT_EQ(set.runs().size(), 3U);
  EXPECT_EQ(set.runs()[0].record.settings.ranks, 1);
  EXPECT_DOUBLE_EQ(set.runs()[0].scaling->speedup, 1.0);
  EXPECT_DOUBLE_EQ(set.runs()[1].scaling->speedup, 1.6);
  EXPECT_DOUBLE_EQ(set.runs()[1].scaling->efficiency, 0.8);
  EXPECT_FALSE(set.runs()[2].record.ok());
  EXPECT_FALSE(set.runs()[2].scaling.has_value());

  const std::string csv = report_for(Kind::kTrain).tables(set).at("summary.csv");
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  for (const char* column :
       {"workload", "backend", "device", "ranks", "batch_size", "dataset_size", "epochs", "status",
        "time_s", "throughput_samples_per_s", "step_time_s", "comm_time_s", "comm_fraction",
        "speedup", "efficiency", "final_loss", "accuracy", "wall_time_s", "phase_train_s"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column;
  }
  std::string row;
  std::getline(lines, row);
  EXPECT_NE(row.find(",ok,iris_mlp,torch,allreduce,cpu,1,4,120,"), std::string::npos) << row;  // no build column
  std::getline(lines, row);
  std::getline(lines, row);
  EXPECT_NE(row.find(",failed,"), std::string::npos) << row;
  EXPECT_NE(row.find("mpirun exit code 1"), std::string::npos) << row;
  // Its dataset_size is unknown ("all" of data it never read), not the setting's 0.
  EXPECT_NE(row.find(",failed,iris_mlp,torch,allreduce,cpu,4,4,,"), std::string::npos) << row;
}

// Weak scaling zips dataset_size with ranks: each seed is one curve along the ranks, not a lone
// point per dataset size; and stats.csv tells the seeds' rows apart.
TEST(ResultSet, AWeakScalingZipIsOneCurveAndEveryVaryingSettingIsInStats) {
  const ResultsDirectory directory = fresh_directory("weak");
  const Experiment experiment = parse_experiment(R"({"name": "weak", "settings": {"workload": "iris_mlp"},
      "sweep": {"seed": [1, 2], "zip": {"ranks": [1, 2], "dataset_size": [60, 120]}}})", "weak.json");
  const auto points = expand(experiment);
  ASSERT_EQ(points.size(), 4U);
  for (const Point& point : points) write_record(directory, point, point.settings.ranks == 1 ? 4.0 : 2.5);
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  const std::string speedup = report_for(Kind::kTrain).plot_data(set).at("speedup");
  EXPECT_NE(speedup.find("\"seed=1\"\n1 1 1 1\n2 "), std::string::npos) << speedup;
  EXPECT_NE(speedup.find("\"seed=2\"\n1 1 1 1\n2 "), std::string::npos) << speedup;
  EXPECT_EQ(speedup.find("dataset_size"), std::string::npos) << speedup;
  const std::string stats = report_for(Kind::kTrain).tables(set).at("stats.csv");
  EXPECT_NE(stats.find(",overlap,scheme,sync_every,max_staleness,other_settings,runs,"), std::string::npos) << stats;
  EXPECT_NE(stats.find(",false,sync,1,,seed=1,1,1,"), std::string::npos) << stats;
  EXPECT_NE(stats.find(",false,sync,1,,seed=2,1,1,"), std::string::npos) << stats;
}

TEST(ResultSet, FindsRecordsByKeyWhereverTheSweepPutThem) {
  const ResultsDirectory directory = fresh_directory("moved");
  const Experiment before = ranks_experiment("[1, 2]");
  const auto old_points = expand(before);
  write_record(directory, old_points[0], 4.0);
  write_record(directory, old_points[1], 2.0);
  // The edited sweep puts ranks=2 first: p000 now; its record still says p001.
  const Experiment after = ranks_experiment("[2, 4, 1]");
  const auto points = expand(after);
  const ResultSet set = ResultSet::load(directory, after, points, true);
  ASSERT_EQ(set.runs().size(), 2U);
  EXPECT_EQ(set.runs()[0].record.settings.ranks, 2);
  EXPECT_EQ(set.runs()[1].record.settings.ranks, 1);
  EXPECT_EQ(set.missing(), 1U);
}

TEST(ResultSet, UnreadableRecordIsRefusedForPlotsAndLeftOutOtherwise) {
  const ResultsDirectory directory = fresh_directory("unreadable");
  const Experiment experiment = ranks_experiment("[1, 2]");
  const auto points = expand(experiment);
  write_record(directory, points[0], 4.0);
  // Parses, but "ok" without measurements: not a complete record.
  Json broken = read_json_file(directory.record_path(points[0].id));
  broken.erase("measurements");
  write_file_atomically(directory.record_path(points[1].id), broken.dump());
  try {
    ResultSet::load(directory, experiment, points, true);
    FAIL() << "an incomplete record was read";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("status \"ok\" without measurements"), std::string::npos)
        << error.what();
  }
  const ResultSet set = ResultSet::load(directory, experiment, points, false);
  EXPECT_EQ(set.runs().size(), 1U);
  EXPECT_EQ(set.missing(), 1U);
}

// The "batch /rank" column shows what each training rank takes per step: under strong scaling
// the global batch_size split over the ranks that train (rank 0 of "ps" only serves by default).
TEST(ResultSet, BatchColumnIsEachTrainingRanksShareOfAStrongScalingBatch) {
  PointSettings settings;
  settings.batch_size = 64;
  settings.ranks = 2;
  EXPECT_EQ(batch_per_training_rank(settings), 64);  // weak: batch_size is per rank
  settings.scaling = "strong";
  EXPECT_EQ(batch_per_training_rank(settings), 32);
  settings.backend = "ps";
  settings.ranks = 3;  // a server and two training ranks
  EXPECT_EQ(batch_per_training_rank(settings), 32);
}

TEST(ResultSet, CsvQuotesFieldsWithCommasAndQuotes) {
  EXPECT_EQ(csv_field("mpirun exit code 1: \"bad\", really"), "\"mpirun exit code 1: \"\"bad\"\", really\"");
  EXPECT_EQ(csv_field("plain"), "plain");
  // A diverged run's loss is not a number: empty, as a value not measured (its convergence says why).
  EXPECT_EQ(csv_number(std::nan("")), "");
  EXPECT_EQ(csv_number(std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(csv_number(0.0), "0");
}

TEST(ResultsDirectory, OneRunHoldsTheLockAndTheSecondIsToldWho) {
  const ResultsDirectory directory = fresh_directory("lock");
  const DirectoryLock first(directory, {"harness", "run", "exp.json"});
  try {
    const DirectoryLock second(directory, {"harness", "run", "other.json"});
    FAIL() << "two runs held the lock";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("in use by another harness run (pid "), std::string::npos) << message;
    EXPECT_NE(message.find("harness run exp.json"), std::string::npos) << message;
  }
}

TEST(ResultsDirectory, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  const ResultsDirectory directory = fresh_directory("atomic");
  const std::string path = directory.path() + "/file.json";
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "second");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(directory.path())) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace harness
