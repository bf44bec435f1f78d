#include "harness/results/results.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace harness {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const auto path = fs::temp_directory_path() / ("harness_results_test_" + name);
  fs::remove_all(path);
  return path.string();
}

Json measurements(double time_s) {
  Json result = Json::parse(R"({"train_samples": 120, "samples_trained": 1200,
    "steps": {"step_s": [0.01], "compute_s": [0.008], "comm_s": [0.002], "exposed_comm_s": [0.002]},
    "epochs": [{"epoch": 1, "train_loss": 0.3, "test_accuracy": 0.5},
               {"epoch": 2, "train_loss": 0.2, "test_accuracy": 0.8}]})");
  result["train_time_s"] = time_s;
  return result;
}

TEST(Results, AtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  const std::string dir = fresh_dir("atomic");
  fs::create_directories(dir);
  const std::string path = dir + "/file.json";
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(Results, SummaryReadsRecordsInPointOrderWithScaling) {
  const ResultsLayout layout(fresh_dir("summary"));
  layout.create();
  const Json provenance = collect_provenance({"harness", "run", "x.json"});
  for (int ranks : {2, 1}) {  // written out of order on purpose
    Point point;
    point.index = ranks - 1;
    point.settings.ranks = ranks;
    point.id = point_id(point.index, point.settings);
    const Json record = make_point_record("exp", point, LaunchOutcome{}, provenance,
                                          measurements(ranks == 1 ? 4.0 : 2.5), "", {});
    write_file_atomically(layout.point_record(point.id), record.dump());
  }
  Point failed;
  failed.index = 2;
  failed.settings.ranks = 4;
  failed.id = point_id(2, failed.settings);
  write_file_atomically(layout.point_record(failed.id),
                        make_point_record("exp", failed, LaunchOutcome{}, provenance, Json(),
                                          "mpirun exit code 1", {"boom"})
                            .dump());

  const auto rows = load_summary(layout);
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[0].settings.ranks, 1);
  EXPECT_DOUBLE_EQ(rows[0].scaling->speedup, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].scaling->speedup, 1.6);
  EXPECT_DOUBLE_EQ(rows[1].scaling->efficiency, 0.8);
  EXPECT_FALSE(rows[2].ok);
  EXPECT_EQ(rows[2].reason, "mpirun exit code 1");

  const std::string csv = summary_csv(rows);
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  for (const char* column :
       {"workload", "backend", "device", "ranks", "batch_size", "dataset_size", "epochs",
        "status", "time_s", "throughput_samples_per_s", "step_time_s", "comm_time_s",
        "comm_fraction", "speedup", "efficiency", "final_loss", "accuracy"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column;
  }
  std::string row;
  std::getline(lines, row);
  EXPECT_NE(row.find(",ok,iris_mlp,torch,allreduce,cpu,1,4,120,"), std::string::npos) << row;
  std::getline(lines, row);
  std::getline(lines, row);
  EXPECT_NE(row.find(",failed,"), std::string::npos) << row;
  EXPECT_NE(row.find("mpirun exit code 1"), std::string::npos) << row;
}

// The "batch /rank" column shows what each training rank takes per step: under strong scaling
// the global batch_size split over the ranks that train (rank 0 of "ps" only serves by default).
TEST(Results, TableShowsEachTrainingRanksShareOfAStrongScalingBatch) {
  const auto batch_column = [](const PointSettings& settings) {
    SummaryRow row;
    row.id = "p000-00000000";
    row.settings = settings;
    std::istringstream table(summary_table({row}));
    std::string line;
    for (int i = 0; i < 3; ++i) std::getline(table, line);  // two header lines, then the row
    std::istringstream fields(line);
    std::string id, workload, backend, ranks, batch;
    fields >> id >> workload >> backend >> ranks >> batch;
    return batch;
  };
  PointSettings settings;
  settings.batch_size = 64;
  settings.ranks = 2;
  EXPECT_EQ(batch_column(settings), "64");  // weak: batch_size is per rank
  settings.scaling = "strong";
  EXPECT_EQ(batch_column(settings), "32");
  settings.backend = "ps";
  settings.ranks = 3;  // a server and two training ranks
  EXPECT_EQ(batch_column(settings), "32");
}

TEST(Results, CsvQuotesFieldsWithCommasAndQuotes) {
  SummaryRow row;
  row.id = "p000-00000000";
  row.reason = "mpirun exit code 1: \"bad\", really";
  const std::string csv = summary_csv({row});
  EXPECT_NE(csv.find(",\"mpirun exit code 1: \"\"bad\"\", really\"\n"), std::string::npos) << csv;
}

TEST(Results, ProvenanceNamesCommitHostAndCommandLine) {
  const Json provenance = collect_provenance({"harness", "run", "x.json"});
  EXPECT_NE(provenance["git_commit"].get<std::string>(), "");
  EXPECT_EQ(provenance["harness_version"], HARNESS_VERSION);
  EXPECT_FALSE(provenance["host"].get<std::string>().empty());
  EXPECT_EQ(provenance["command_line"][2], "x.json");
}

}  // namespace
}  // namespace harness
