// End to end: bad input (experiment files, options, commands) gets one line and exit 2.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "backends/registry.h"
#include "backends/device_staging.h"
#include "backends/gloo_allreduce.h"
#include "backends/gradient_sync.h"
#include <fmt/format.h>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/study/settings.h"

namespace harness::e2e {
namespace {

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

// What `run` refuses, `run --dry-run` refuses too (it "validates like a run"), and a value given
// twice on the command line is refused rather than the last one winning silently.
TEST(EndToEnd, CommandLineMistakesAreRefusedByRunAndDryRunAlike) {
  const fs::path dir = scratch("command_line_mistakes");
  const fs::path experiment = write_experiment(dir, R"({"name": "x", "settings": {"epochs": 1}})");
  std::ofstream(dir / "file") << "not a directory";
  fs::create_directories(dir / "stranger");
  std::ofstream(dir / "stranger" / "notes.txt") << "not results";
  int attempt = 0;
  const auto refused = [&](const std::vector<std::string>& extra, const std::string& message) {
    for (const bool dry_run : {true, false}) {
      std::vector<std::string> arguments = {"run", experiment.string()};
      arguments.insert(arguments.end(), extra.begin(), extra.end());
      if (dry_run) arguments.emplace_back("--dry-run");
      const HarnessRun run = run_harness(arguments, dir / fmt::format("{}.log", ++attempt));
      EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
      ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
      EXPECT_NE(run.output[0].find(message), std::string::npos) << run.output[0];
    }
  };
  refused({"--out", (dir / "file").string()}, "--out: cannot create directory");
  refused({"--out", (dir / "stranger").string()}, "not empty and not a results directory");
  refused({"--detach"}, "--detach: the local launcher's jobs end with the harness");
  refused({"--set", "lr=0.1", "--set", "lr=0.2"}, "--set lr: given more than once");
  refused({"--timeline", "--set", "timeline=false"}, "--set timeline: given more than once");
  refused({"--build", "a=x", "--build", "a=y"}, "--build a: given more than once");
  refused({"--sweep", R"({"batch_size": [4], "batch_size": [8]})"}, "--sweep: batch_size: duplicate key");
  refused({"--fresh", "--retry-failed"}, "--fresh excludes --retry-failed");
  // A value from the command line is not in the file, and the message says where it came from.
  refused({"--set", "workload=bert"},
          experiment.string() + " with --set/--sweep/--build: settings.workload: unknown workload \"bert\"");
  EXPECT_FALSE(fs::exists(dir / "results"));
}

// Repeats, zip and exclude through the real binary: summary.csv has a row per run, stats.csv a
// row per configuration with intervals around the medians; `harness plot` rebuilds every file
// from the records alone; `harness plan` estimates the time from those results.

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
  // comm_cuda, cnn_cuda, cnn_two_ranks_one_gpu, gpt_cuda, nccl_cuda, pipeline_cuda, resnet50_cuda
  EXPECT_EQ(checked, 7);
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

TEST(EndToEnd, UnknownCommandIsNamed) {
  const fs::path dir = scratch("unknown_command");
  const HarnessRun run = run_harness({"frobnicate", "x.json"}, dir / "log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_EQ(run.output[0],
            "harness: unknown command \"frobnicate\" (expected one of: run, plan, plot, status, cancel, check, model, schema; "
            "see harness --help)");
}

// Anything may be named as the experiment file: each gets one short line and exit 2, at once.
TEST(EndToEnd, ExperimentFilesThatAreNotTextAreRefusedQuickly) {
  const fs::path dir = scratch("not_text");
  const fs::path fifo = dir / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(dir / "binary.json") << std::string("{\"name\": \"x\0\xff\"}", 15);
  std::ofstream(dir / "long.json") << "{\"name\": \"" << std::string(200000, 'x') << "\"}\n";
  int tries = 0;
  for (const fs::path& path : {fifo, fs::path("/dev/zero"), dir / "binary.json", dir / "long.json"}) {
    const auto start = std::chrono::steady_clock::now();
    const HarnessRun run = run_harness({"run", path.string()}, dir / fmt::format("{}.log", ++tries));
    EXPECT_EQ(run.outcome.exit_code, 2) << path;
    ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
    EXPECT_LT(run.output[0].size(), 400U) << run.output[0];
    EXPECT_NE(run.output[0].find(path.string() + ": "), std::string::npos) << run.output[0];
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30) << path;
  }
  EXPECT_FALSE(fs::exists(dir / "results"));
}

}  // namespace
}  // namespace harness::e2e
