// End to end: the real `harness` binary on small experiment files, as a user runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>
#include <chrono>
#include <algorithm>

#include "backends/registry.h"
#include "backends/device_staging.h"
#include "backends/gloo_allreduce.h"
#include "backends/gradient_sync.h"
#include "harness/common/process.h"
#include "harness/results/results.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

struct HarnessRun {
  ProcessOutcome outcome;
  std::vector<std::string> output;  // stdout and stderr
};

fs::path scratch(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("harness_e2e_" + name);
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

// Runs the harness in the directory that holds `log`, as a user would from their project.
HarnessRun run_harness(const std::vector<std::string>& arguments, const fs::path& log) {
  ProcessRequest request;
  request.argv = {HARNESS_BINARY};
  request.argv.insert(request.argv.end(), arguments.begin(), arguments.end());
  request.log_path = log.string();
  request.working_directory = log.parent_path().string();
  request.timeout_s = 300;
  HarnessRun run;
  run.outcome = run_process(request);
  run.output = tail_lines(log.string(), 1000);
  return run;
}

fs::path write_experiment(const fs::path& directory, const std::string& text) {
  const fs::path path = directory / "experiment.json";
  std::ofstream(path) << text;
  return path;
}

// One CSV line split into fields, with RFC 4180 quoting ("a,b" and "say ""hi""").
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// summary.csv as rows of column name -> value.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> columns = csv_fields(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = csv_fields(line);
    EXPECT_EQ(fields.size(), columns.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < columns.size() && i < fields.size(); ++i) row[columns[i]] = fields[i];
    rows.push_back(row);
  }
  return rows;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

TEST(EndToEnd, TinyScalingStudyWritesRecordsSummaryAndPlots) {
  const fs::path dir = scratch("tiny");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "tiny",
    "settings": {"workload": "iris_mlp", "backend": "allreduce", "epochs": 8, "lr": 0.5,
                 "batch_size": 4},
    "sweep": {"ranks": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);

  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("workload"), "iris_mlp");
    EXPECT_EQ(row.at("dataset_size"), "120");
    EXPECT_GT(std::stod(row.at("time_s")), 0.0);
    EXPECT_GT(std::stod(row.at("throughput_samples_per_s")), 0.0);
    EXPECT_GE(std::stod(row.at("comm_fraction")), 0.0);
    EXPECT_LE(std::stod(row.at("comm_fraction")), 1.0);
  }
  EXPECT_EQ(rows[0].at("ranks"), "1");
  EXPECT_EQ(rows[0].at("imbalance_time_s"), "0");  // one rank waits for nobody
  EXPECT_GE(std::stod(rows[1].at("imbalance_time_s")), 0.0);
  EXPECT_EQ(rows[0].at("speedup"), "1");
  EXPECT_EQ(rows[0].at("efficiency"), "1");
  EXPECT_EQ(rows[1].at("ranks"), "2");
  EXPECT_NEAR(std::stod(rows[1].at("efficiency")), std::stod(rows[1].at("speedup")) / 2, 1e-4);

  for (const auto& row : rows) {
    const Json record = read_json_file((out / "points" / (row.at("id") + ".json")).string());
    EXPECT_EQ(record["schema_version"], 1);
    EXPECT_EQ(record["status"], "ok");
    for (const char* key : {"git_commit", "host", "command_line", "started_at", "finished_at"}) {
      EXPECT_TRUE(record["provenance"].contains(key)) << key;
    }
    const Json& measurements = record["measurements"];
    EXPECT_NE(measurements["mpi_library"].get<std::string>().find("MPI"), std::string::npos);
    EXPECT_FALSE(measurements["torch_version"].get<std::string>().empty());
    const Json& steps = measurements["steps"];
    EXPECT_EQ(steps["imbalance_s"].size(), steps["step_s"].size());
    ASSERT_EQ(steps["wait_s"].size(), steps["step_s"].size());
    for (std::size_t s = 0; s < steps["wait_s"].size(); ++s) {  // a part of the exposed time
      EXPECT_GE(steps["wait_s"][s].get<double>(), 0.0);
      EXPECT_LE(steps["wait_s"][s].get<double>(), steps["exposed_comm_s"][s].get<double>());
    }
    const Json& epochs = measurements["epochs"];
    ASSERT_EQ(epochs.size(), 8U);
    EXPECT_LT(epochs.back()["train_loss"].get<double>(), epochs.front()["train_loss"].get<double>())
        << "loss did not decrease for " << row.at("id");
    EXPECT_TRUE(fs::exists(out / "logs" / (row.at("id") + ".log")));
  }
  for (const char* plot : {"speedup", "efficiency", "throughput", "loss"}) {
    for (const char* extension : {".png", ".svg"}) {
      const fs::path image = out / "plots" / (std::string(plot) + extension);
      ASSERT_TRUE(fs::exists(image)) << image;
      EXPECT_GT(fs::file_size(image), 1000U) << image;
    }
  }
  EXPECT_TRUE(fs::exists(out / "experiment.json"));
}

TEST(EndToEnd, FashionMnistCnnTrainsOnTwoRanks) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "no dataset-fashion-mnist";
  const fs::path dir = scratch("cnn");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "cnn",
    "settings": {"workload": "mnist_cnn", "epochs": 2, "lr": 0.05, "batch_size": 32,
                 "dataset_size": 512, "test_size": 500, "ranks": 2, "bucket_mb": 1,
                 "overlap": true}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("dataset_size"), "512");
  EXPECT_GT(std::stod(rows[0].at("accuracy")), 0.3);  // ten classes: chance is 0.1
  const Json record = read_json_file((out / "points" / (rows[0].at("id") + ".json")).string());
  EXPECT_EQ(record["measurements"]["buckets"], 3);  // fc2 + fc1 bias, fc1 weight, the convs
  const Json& epochs = record["measurements"]["epochs"];
  EXPECT_LT(epochs[1]["train_loss"].get<double>(), epochs[0]["train_loss"].get<double>());
}

TEST(EndToEnd, CommBenchmarkOfEveryBackendSumsCorrectly) {
  const fs::path dir = scratch("comm");
  const bool gloo = gloo_available();  // a build without libgloo-dev has the other three
  const fs::path experiment = write_experiment(dir, std::string(R"({
    "name": "comm",
    "settings": {"kind": "comm", "ranks": 2, "comm_min_bytes": 4, "comm_max_bytes": 65536,
                 "comm_size_factor": 16, "comm_iterations": 3, "comm_warmup_iterations": 1},
    "sweep": {"backend": ["allreduce", "ring", "ps")") + (gloo ? R"(, "gloo"]}})" : "]}}"));
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), (gloo ? 4U : 3U) * 5U);  // backends × sizes 4, 64, 1024, 16384, 65536
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("ranks"), "2");
    EXPECT_EQ(row.at("wrong"), "0") << row.at("backend") << " " << row.at("bytes");
    EXPECT_GT(std::stod(row.at("time_us_median")), 0.0);
    EXPECT_LE(std::stod(row.at("time_us_min")), std::stod(row.at("time_us_median")));
    EXPECT_GE(std::stod(row.at("time_us_max")), std::stod(row.at("time_us_median")));
    // Two ranks: busbw = algbw · 2(p-1)/p = algbw.
    EXPECT_EQ(row.at("busbw_gbps"), row.at("algbw_gbps"));
  }
  EXPECT_EQ(rows[4].at("bytes"), "65536");
  for (const char* plot : {"bandwidth.png", "bandwidth.svg", "latency.png", "latency.svg"}) {
    EXPECT_GT(fs::file_size(out / "plots" / plot), 1000U) << plot;
  }
}

TEST(EndToEnd, FailedPointIsRecordedAndTheSweepGoesOn) {
  const fs::path dir = scratch("failing");
  // The first point cannot finish 50,000 epochs (1.5 M steps) in five seconds: it times out.
  const fs::path experiment = write_experiment(dir, R"({
    "name": "failing",
    "settings": {"timeout_s": 5},
    "sweep": {"epochs": [50000, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  EXPECT_TRUE(run.outcome.exited);
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);

  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].at("status"), "failed");
  EXPECT_NE(rows[0].at("reason").find("timed out"), std::string::npos) << rows[0].at("reason");
  EXPECT_EQ(rows[1].at("status"), "ok");
  const Json record = read_json_file((out / "points" / (rows[0].at("id") + ".json")).string());
  EXPECT_EQ(record["status"], "failed");
  EXPECT_TRUE(record["log_tail"].is_array());
}

struct BadExperiment {
  const char* name;
  const char* text;
  const char* message;  // expected in the one line the harness prints
};

void PrintTo(const BadExperiment& bad, std::ostream* out) { *out << bad.name; }

class BadExperimentFile : public ::testing::TestWithParam<BadExperiment> {};

TEST_P(BadExperimentFile, ExitsTwoWithOneLineAndLaunchesNothing) {
  const fs::path dir = scratch(std::string("bad_") + GetParam().name);
  const fs::path experiment = write_experiment(dir, GetParam().text);
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  EXPECT_TRUE(run.outcome.exited);
  EXPECT_EQ(run.outcome.exit_code, 2);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find(experiment.string() + ": "), std::string::npos) << run.output[0];
  EXPECT_NE(run.output[0].find(GetParam().message), std::string::npos) << run.output[0];
  EXPECT_FALSE(fs::exists(out)) << "the results directory was created";
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadExperimentFile,
    ::testing::Values(
        BadExperiment{"invalid_json", R"({"name": "x",)", "invalid JSON"},
        BadExperiment{"unknown_key", R"({"name": "x", "setings": {}})", "unknown key \"setings\""},
        BadExperiment{"wrong_type", R"({"name": "x", "sweep": {"ranks": [1, "two"]}})",
                      "sweep.ranks[1]: expected a positive integer"},
        BadExperiment{"empty_sweep", R"({"name": "x", "sweep": {"batch_size": []}})",
                      "sweep.batch_size: expected a non-empty list"},
        BadExperiment{"unknown_backend", R"({"name": "x", "sweep": {"backend": ["smoke"]}})",
                      "sweep.backend[0]: unknown backend \"smoke\""},
        BadExperiment{"unknown_workload", R"({"name": "x", "settings": {"workload": "bert"}})",
                      "settings.workload: unknown workload \"bert\""}),
    [](const ::testing::TestParamInfo<BadExperiment>& info) { return info.param.name; });

// The corpus of malformed experiment files in tests/e2e/bad_experiments/: each makes `harness run`
// exit 2 with one line that names the file and contains the expected text (expected.tsv), and
// none creates its results directory or launches anything.
TEST(EndToEnd, BadExperimentCorpusExitsTwoWithOneLineEach) {
  const fs::path corpus = fs::path(HARNESS_SOURCE_DIR) / "tests" / "e2e" / "bad_experiments";
  const fs::path dir = scratch("corpus");
  std::ifstream manifest(corpus / "expected.tsv");
  std::string line;
  int checked = 0;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const fs::path file = corpus / line.substr(0, tab);
    const std::string expected = line.substr(tab + 1);
    ASSERT_TRUE(fs::exists(file)) << file;
    const fs::path out = dir / file.stem();
    const HarnessRun run =
        run_harness({"run", file.string(), "--out", out.string()}, dir / (file.stem().string() + ".log"));
    EXPECT_TRUE(run.outcome.exited) << file;
    EXPECT_EQ(run.outcome.exit_code, 2) << file;
    ASSERT_EQ(run.output.size(), 1U) << file << "\n" << joined(run.output);
    EXPECT_NE(run.output[0].find(file.string() + ": "), std::string::npos) << run.output[0];
    EXPECT_NE(run.output[0].find(expected), std::string::npos)
        << file.filename() << "\n  got:      " << run.output[0] << "\n  expected: " << expected;
    EXPECT_FALSE(fs::exists(out)) << file << ": the results directory was created";
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

// An --out that cannot be created (a path under a regular file) is bad input too.
TEST(EndToEnd, UnwritableOutExitsTwo) {
  const fs::path dir = scratch("unwritable");
  const fs::path experiment = write_experiment(dir, R"({"name": "x"})");
  std::ofstream(dir / "file") << "not a directory";
  const HarnessRun run =
      run_harness({"run", experiment.string(), "--out", (dir / "file" / "out").string()}, dir / "log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("--out: cannot create directory"), std::string::npos) << run.output[0];
}

// Repeats, zip and exclude through the real binary: summary.csv has a row per run, stats.csv a
// row per configuration with intervals around the medians; `harness plot` rebuilds every file
// from the records alone; `harness plan` estimates the time from those results.
TEST(EndToEnd, RepeatedSweepGivesStatisticsPlotsAndAnEstimate) {
  const fs::path dir = scratch("repeats");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "repeats", "repeats": 2,
    "settings": {"epochs": 3, "lr": 0.5, "threads_per_rank": 1},
    "sweep": {"ranks": [1, 2], "zip": {"batch_size": [4, 8], "warmup_steps": [2, 1]}},
    "exclude": [{"ranks": 2, "batch_size": 8}]})");
  // No --out: the default results/<name>/<timestamp> under the working directory (dir).
  HarnessRun run = run_harness({"run", experiment.string()}, dir / "log1");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  std::vector<fs::path> outs;
  for (const auto& entry : fs::directory_iterator(dir / "results" / "repeats")) outs.push_back(entry.path());
  ASSERT_EQ(outs.size(), 1U);
  const fs::path out = outs.front();

  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 6U);  // 3 combinations × 2 repeats
  EXPECT_EQ(rows[0].at("repeat"), "0");
  EXPECT_EQ(rows[5].at("repeat"), "1");
  const auto stats = read_csv(out / "stats.csv");
  ASSERT_EQ(stats.size(), 3U);
  for (const auto& row : stats) {
    EXPECT_EQ(row.at("runs"), "2");
    EXPECT_EQ(row.at("ok_runs"), "2");
    const double low = std::stod(row.at("throughput_low"));
    const double median = std::stod(row.at("throughput_median"));
    const double high = std::stod(row.at("throughput_high"));
    EXPECT_LE(low, median);
    EXPECT_LE(median, high);
  }
  // Combinations in sweep order: (1, 4), (1, 8), (2, 4); (2, 8) is excluded.
  EXPECT_EQ(stats[2].at("ranks"), "2");
  EXPECT_FALSE(stats[2].at("karp_flatt").empty());
  EXPECT_EQ(stats[2].at("baseline_id"), stats[0].at("first_id"));

  // Rebuild everything from the records.
  std::map<std::string, std::uintmax_t> sizes;
  for (const auto& entry : fs::directory_iterator(out / "plots")) {
    if (entry.path().extension() == ".png") sizes[entry.path().filename().string()] = entry.file_size();
  }
  EXPECT_GE(sizes.size(), 9U);
  fs::remove_all(out / "plots");
  fs::remove(out / "summary.csv");
  fs::remove(out / "stats.csv");
  run = run_harness({"plot", out.string()}, dir / "log2");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_EQ(read_csv(out / "summary.csv").size(), 6U);
  EXPECT_EQ(read_csv(out / "stats.csv").size(), 3U);
  for (const auto& [name, size] : sizes) {
    EXPECT_TRUE(fs::exists(out / "plots" / name)) << name;
    EXPECT_GT(fs::file_size(out / "plots" / name), 1000U) << name;
  }
  EXPECT_EQ(run_harness({"plot", (dir / "nowhere").string()}, dir / "log3").outcome.exit_code, 2);

  run = run_harness({"plan", experiment.string()}, dir / "log4");
  ASSERT_TRUE(run.outcome.ok());
  EXPECT_NE(joined(run.output).find("estimated time: "), std::string::npos) << joined(run.output);
  EXPECT_NE(joined(run.output).find("(6 of 6 point(s) measured before under results/repeats/)"),
            std::string::npos)
      << joined(run.output);
}

// A run whose loss diverges still measured real timings: it is kept as a result, the console
// says it diverged, summary.csv holds nan, and the loss plot leaves the NaN epochs out instead
// of failing to draw.
TEST(EndToEnd, DivergedTrainingIsKeptAndSaid) {
  const fs::path dir = scratch("diverged");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "diverged",
    "settings": {"workload": "iris_mlp", "engine": "blas", "lr": 1e308, "epochs": 2},
    "sweep": {"seed": [1, 2]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_NE(joined(run.output).find("training diverged"), std::string::npos) << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok");
    EXPECT_EQ(row.at("final_loss"), "nan");
    EXPECT_GT(std::stod(row.at("throughput_samples_per_s")), 0.0);
  }
  for (const auto& entry : fs::directory_iterator(out / "plots")) {
    if (entry.path().extension() == ".png") {
      EXPECT_GT(entry.file_size(), 1000U) << entry.path();
    }
  }
}

// `plot` refuses to rebuild a summary without a record it cannot read, and says which; `run`
// refuses an --out directory that holds another experiment's results or unrelated files.
TEST(EndToEnd, ResultsOfOneStudyAreNotSilentlyReplaced) {
  const fs::path dir = scratch("foreign");
  const fs::path first = write_experiment(dir, R"({
    "name": "first",
    "settings": {"workload": "iris_mlp", "engine": "blas", "epochs": 1},
    "sweep": {"seed": [1, 2]}})");
  const fs::path out = dir / "out";
  HarnessRun run = run_harness({"run", first.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const auto read_text = [](const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string summary = read_text(out / "summary.csv");

  fs::create_directories(dir / "other");
  const fs::path second = dir / "other" / "second.json";
  std::ofstream(second) << R"({"name": "second", "settings": {"workload": "iris_mlp", "epochs": 1}})";
  run = run_harness({"run", second.string(), "--out", out.string()}, dir / "log2");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("holds the results of experiment \"first\", not \"second\""),
            std::string::npos)
      << run.output[0];
  EXPECT_EQ(read_text(out / "summary.csv"), summary);

  fs::create_directories(dir / "unrelated");
  std::ofstream(dir / "unrelated" / "notes.txt") << "mine";
  run = run_harness({"run", second.string(), "--out", (dir / "unrelated").string()}, dir / "log3");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  EXPECT_NE(joined(run.output).find("not a results directory"), std::string::npos) << joined(run.output);
  EXPECT_FALSE(fs::exists(dir / "unrelated" / "points"));

  const auto records = std::vector<fs::directory_entry>(fs::directory_iterator(out / "points"), {});
  ASSERT_EQ(records.size(), 2U);
  std::ofstream(records[0].path()) << "{\"garb";
  run = run_harness({"plot", out.string()}, dir / "log4");
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find(records[0].path().filename().string() + ": not a readable point record"),
            std::string::npos)
      << run.output[0];
  EXPECT_EQ(read_text(out / "summary.csv"), summary);
}

TEST(EndToEnd, EmptyOutDirectoryIsRefused) {  // it would silently mean the default directory
  const fs::path dir = scratch("empty_out");
  const fs::path experiment = write_experiment(dir, R"({"name": "x"})");
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", ""}, dir / "log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("--out: expected a directory, got an empty string"), std::string::npos)
      << run.output[0];
  EXPECT_FALSE(fs::exists(dir / "results"));
}

TEST(EndToEnd, MissingExperimentFileExitsTwo) {
  const fs::path dir = scratch("missing");
  const HarnessRun run = run_harness({"run", (dir / "nope.json").string()}, dir / "log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  ASSERT_EQ(run.output.size(), 1U);
  EXPECT_NE(run.output[0].find("nope.json: cannot open experiment file"), std::string::npos);
}

TEST(EndToEnd, PlanListsThePointsWithoutRunningThem) {
  const fs::path dir = scratch("plan");
  const fs::path experiment =
      write_experiment(dir, R"({"name": "p", "sweep": {"ranks": [1, 2, 4], "lr": [0.1, 0.5]}})");
  const HarnessRun run = run_harness({"plan", experiment.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const std::string text = joined(run.output);
  EXPECT_NE(text.find("6 point(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("14 rank-slot(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks=4 lr=0.5"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "results")) << "plan wrote results";
}

TEST(EndToEnd, DefaultResultsDirectoryIsUnderResultsByNameAndTime) {
  const fs::path dir = scratch("default_out");
  const fs::path experiment = write_experiment(dir, R"({"name": "quick", "settings": {"epochs": 1}})");
  const HarnessRun run = run_harness({"run", experiment.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  ASSERT_TRUE(fs::is_directory(dir / "results" / "quick"));
  const auto runs = fs::directory_iterator(dir / "results" / "quick");
  const fs::path first = runs->path();
  EXPECT_TRUE(fs::exists(first / "summary.csv"));
  EXPECT_EQ(first.filename().string().size(), std::string("20261122-030652").size());
}

// The experiment edited between two runs into one directory: the first run's records stay on
// disk, but the summary holds only the current points and measures them against each other.
// (A differently named experiment is refused there: ResultsOfOneStudyAreNotSilentlyReplaced.)
TEST(EndToEnd, EarlierRecordsInTheSameDirectoryAreNotBaselines) {
  const fs::path dir = scratch("reuse");
  const fs::path out = dir / "out";
  const fs::path first = dir / "first.json";
  std::ofstream(first) << R"({"name": "a", "settings": {"epochs": 2}, "sweep": {"ranks": [1, 2]}})";
  ASSERT_TRUE(run_harness({"run", first.string(), "--out", out.string()}, dir / "log1").outcome.ok());
  const fs::path second = dir / "second.json";
  std::ofstream(second) << R"({"name": "a", "settings": {"epochs": 2, "lr": 0.1}, "sweep": {"ranks": [2]}})";
  ASSERT_TRUE(run_harness({"run", second.string(), "--out", out.string()}, dir / "log2").outcome.ok());
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].at("speedup"), "1") << "measured against a point of another experiment";
}

// Kill -9 the harness while its second point runs; running again into the same directory keeps
// the completed point (its record untouched) and runs only the missing one; a changed sweep
// adopts the completed record under its new position; --fresh runs everything again.
TEST(EndToEnd, KilledSweepResumesRunningOnlyWhatIsMissing) {
  const fs::path dir = scratch("resume");
  const fs::path experiment =
      write_experiment(dir, R"({"name": "resume", "sweep": {"epochs": [2, 600]}})");
  const fs::path out = dir / "out";
  const fs::path log = dir / "log1";
  ProcessRequest request;
  request.argv = {"sh", "-c",
                  std::string(HARNESS_BINARY) + " run " + experiment.string() + " --out " +
                      out.string() + " & pid=$!; "
                      "while ! grep -q '\\[2/2\\]' " + log.string() + "; do sleep 0.2; done; "
                      "sleep 0.5; kill -KILL $pid; wait $pid; echo \"exit=$?\""};
  request.log_path = log.string();
  request.timeout_s = 120;
  ASSERT_TRUE(run_process(request).ok());
  EXPECT_EQ(tail_lines(log.string(), 1).back(), "exit=137");
  // mpirun dies with the harness (PR_SET_PDEATHSIG), and its ranks with it.
  for (int i = 0; i < 50 && std::system("pgrep -f '[h]arness worker' > /dev/null") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(std::system("pgrep -f '[h]arness worker' > /dev/null"), 256) << "a rank outlived the harness";
  ASSERT_EQ(std::distance(fs::directory_iterator(out / "points"), fs::directory_iterator()), 1);
  const fs::path first_record = fs::directory_iterator(out / "points")->path();
  const Json before = read_json_file(first_record.string());

  HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log2");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_NE(joined(run.output).find("[1/2] " + before["id"].get<std::string>()), std::string::npos);
  EXPECT_NE(run.output.at(1).find("kept (completed in an earlier run)"), std::string::npos)
      << joined(run.output);
  EXPECT_EQ(read_json_file(first_record.string()), before) << "the completed record was rewritten";
  auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[1].at("status"), "ok");

  // The completed points move to their new positions in a changed sweep.
  std::ofstream(experiment) << R"({"name": "resume", "sweep": {"epochs": [1, 2, 600]}})";
  run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log3");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const auto kept_line = std::find_if(run.output.begin(), run.output.end(), [](const std::string& line) {
    return line.rfind("[2/3] p001-", 0) == 0;
  });
  ASSERT_NE(kept_line, run.output.end()) << joined(run.output);
  EXPECT_NE(kept_line->find("kept"), std::string::npos) << *kept_line;
  rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[1].at("epochs"), "2");
  EXPECT_FALSE(fs::exists(first_record)) << "the record of the old position is left behind";

  run = run_harness({"run", experiment.string(), "--out", out.string(), "--fresh"}, dir / "log4");
  ASSERT_TRUE(run.outcome.ok());
  EXPECT_EQ(joined(run.output).find("kept"), std::string::npos) << "--fresh kept a point";
}

TEST(EndToEnd, InterruptKeepsCompletedPointsAndExits130) {
  const fs::path dir = scratch("interrupt");
  // The first point finishes in about a second; the second would run for minutes.
  const fs::path experiment = write_experiment(dir, R"({
    "name": "interrupt", "sweep": {"epochs": [2, 50000]}})");
  const fs::path out = dir / "out";
  const fs::path log = dir / "log";
  ProcessRequest request;
  request.argv = {"sh", "-c",
                  std::string(HARNESS_BINARY) + " run " + experiment.string() + " --out " +
                      out.string() + " & pid=$!; "
                      // Wait until the second point is running, then press Ctrl-C.
                      "while ! grep -q '\\[2/2\\]' " + log.string() + "; do sleep 0.2; done; "
                      "sleep 1; kill -INT $pid; wait $pid; echo \"exit=$?\""};
  request.log_path = log.string();
  request.timeout_s = 120;
  ASSERT_TRUE(run_process(request).ok());
  const auto lines = tail_lines(log.string(), 200);
  EXPECT_EQ(lines.back(), "exit=130") << joined(lines);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1U) << "the interrupted point must leave no record";
  EXPECT_EQ(rows[0].at("status"), "ok");
  EXPECT_EQ(rows[0].at("epochs"), "2");
  EXPECT_TRUE(fs::exists(out / "plots" / "loss.png"));
  EXPECT_EQ(std::system("pgrep -f '[h]arness worker' > /dev/null"), 256) << "a rank outlived Ctrl-C";
}

TEST(EndToEnd, EveryShippedExperimentIsValid) {
  const fs::path dir = scratch("shipped");
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(HARNESS_SOURCE_DIR) / "experiments")) {
    if (entry.path().extension() != ".json" || entry.path().filename() == "schema.json") continue;
    const HarnessRun run =
        run_harness({"plan", entry.path().string()}, dir / (entry.path().stem().string() + ".log"));
    EXPECT_TRUE(run.outcome.ok()) << entry.path() << "\n" << joined(run.output);
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

// The accuracy bars of the shipped experiments/accuracy.json (about a minute here): the Iris MLP
// on both engines reaches >= 90% held-out accuracy, the CNN >= 85% after one Fashion-MNIST epoch.
TEST(EndToEnd, AccuracyExperimentMeetsItsBars) {
  const fs::path dir = scratch("accuracy");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness(
      {"run", (fs::path(HARNESS_SOURCE_DIR) / "experiments" / "accuracy.json").string(), "--out",
       out.string()},
      dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 3U);
  for (const auto& row : rows) {
    const double bar = row.at("workload") == "iris_mlp" ? 0.90 : 0.85;
    EXPECT_GE(std::stod(row.at("accuracy")), bar) << row.at("workload") << "/" << row.at("engine");
  }
  EXPECT_EQ(rows[1].at("engine"), "blas");
  // Same initial weights, same samples: both engines end at the same loss.
  EXPECT_NEAR(std::stod(rows[0].at("final_loss")), std::stod(rows[1].at("final_loss")), 1e-4);
}

// experiments/workloads.json: every workload (iris_mlp on both engines, mnist_cnn, resnet, kmeans)
// trains with every backend on 2 ranks, and the backends agree on the final loss.
TEST(EndToEnd, EveryWorkloadRunsWithEveryBackend) {
  const fs::path dir = scratch("workloads");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness(
      {"run", (fs::path(HARNESS_SOURCE_DIR) / "experiments" / "workloads.json").string(), "--out",
       out.string()},
      dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  const auto rows = read_csv(out / "summary.csv");
  std::map<std::string, std::string> first_loss;  // per workload/engine
  std::map<std::string, int> backends;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok") << row.at("id");
    const std::string workload = row.at("workload") + "/" + row.at("engine");
    ++backends[workload];
    const auto [entry, inserted] = first_loss.emplace(workload, row.at("final_loss"));
    if (!inserted) {
      EXPECT_NEAR(std::stod(row.at("final_loss")), std::stod(entry->second), 1e-4)
          << workload << " with " << row.at("backend");
    }
  }
  EXPECT_EQ(backends.size(), 5U);
  for (const auto& [workload, count] : backends) {
    EXPECT_EQ(count, static_cast<int>(backend_names().size())) << workload;
  }
}

// The GPU experiments live in experiments/gpu/: where they cannot run (no CUDA build, no device,
// a CPU-only LibTorch) the harness says why in one line, before launching anything.
TEST(EndToEnd, GpuExperimentsSayWhyTheyCannotRunHere) {
  if (cuda_status().usable) GTEST_SKIP() << "this machine has a CUDA device";
  const fs::path dir = scratch("gpu");
  int checked = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(HARNESS_SOURCE_DIR) / "experiments" / "gpu")) {
    const fs::path out = dir / entry.path().stem();
    const HarnessRun run = run_harness({"run", entry.path().string(), "--out", out.string()},
                                       dir / (entry.path().stem().string() + ".log"));
    EXPECT_EQ(run.outcome.exit_code, 2) << entry.path();
    ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
    EXPECT_NE(run.output[0].find("settings.device: expected \"cpu\" on this build and machine: " +
                                 cuda_status().reason),
              std::string::npos)
        << run.output[0];
    EXPECT_FALSE(fs::exists(out));
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// experiments/schema.json is what `harness schema` generates from the settings table, so it
// cannot drift from what the harness accepts (regenerate: harness schema > experiments/schema.json).
TEST(EndToEnd, ShippedSchemaMatchesTheSettingsTable) {
  const fs::path dir = scratch("schema");
  const HarnessRun run = run_harness({"schema"}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  std::stringstream whole;
  whole << std::ifstream(dir / "log").rdbuf();
  const Json generated = Json::parse(whole.str());
  const Json shipped = read_json_file((fs::path(HARNESS_SOURCE_DIR) / "experiments" / "schema.json").string());
  EXPECT_EQ(generated, shipped) << "regenerate experiments/schema.json with `harness schema`";
  const Json& settings = generated["$defs"]["settings"]["properties"];
  for (const auto& setting : setting_table()) {
    EXPECT_TRUE(settings.contains(std::string(setting.key))) << setting.key;
  }
  EXPECT_FALSE(generated["properties"]["sweep"]["properties"].contains("kind"));
  EXPECT_EQ(settings["backend"]["enum"].size(), backend_names().size());
}

TEST(EndToEnd, VersionAndHelp) {
  const fs::path dir = scratch("version");
  HarnessRun run = run_harness({"--version"}, dir / "log");
  ASSERT_TRUE(run.outcome.ok());
  EXPECT_EQ(run.output.at(0).rfind("harness 0.", 0), 0U) << run.output.at(0);
  run = run_harness({"--help"}, dir / "log2");
  ASSERT_TRUE(run.outcome.ok());
  EXPECT_NE(joined(run.output).find("iris_mlp"), std::string::npos);
  run = run_harness({"frobnicate"}, dir / "log3");
  EXPECT_EQ(run.outcome.exit_code, 2);
}

}  // namespace
}  // namespace harness
