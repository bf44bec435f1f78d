#include "harness/study/experiment.h"
#include "harness/study/sweep.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <tuple>

#include <set>

#include "harness/common/errors.h"
#include "parse_error.h"

namespace harness {
namespace {


TEST(Experiment, SweepExpandsToTheCartesianProductLastAxisFastest) {
  const Experiment experiment = parse_experiment(R"({
      "name": "grid",
      "settings": {"epochs": 3, "lr": 0.5},
      "sweep": {"ranks": [1, 2, 4], "batch_size": [4, 16]}})",
                                                 "exp.json");
  const auto points = expand(experiment);
  ASSERT_EQ(points.size(), 6U);
  const std::vector<std::pair<int, int>> expected = {{1, 4},  {1, 16}, {2, 4},
                                                     {2, 16}, {4, 4},  {4, 16}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].index, static_cast<int>(i));
    EXPECT_EQ(points[i].settings.ranks, expected[i].first);
    EXPECT_EQ(points[i].settings.batch_size, expected[i].second);
    EXPECT_EQ(points[i].settings.epochs, 3);
    EXPECT_DOUBLE_EQ(points[i].settings.lr, 0.5);
  }
}

TEST(Experiment, ZipGroupsVaryTogetherAsOneAxisOfTheProduct) {
  const Experiment experiment = parse_experiment(R"({
      "name": "zip",
      "sweep": {"ranks": [1, 2],
                "zip": {"workload": ["iris_mlp", "mnist_cnn", "mnist_cnn"], "lr": [0.5, 0.05, 0.1],
                        "epochs": [200, 1, 1]}}})",
                                                 "exp.json");
  const auto points = expand(experiment);
  ASSERT_EQ(points.size(), 6U);
  const std::vector<std::tuple<int, std::string, double, int>> expected = {
      {1, "iris_mlp", 0.5, 200}, {1, "mnist_cnn", 0.05, 1}, {1, "mnist_cnn", 0.1, 1},
      {2, "iris_mlp", 0.5, 200}, {2, "mnist_cnn", 0.05, 1}, {2, "mnist_cnn", 0.1, 1}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& [ranks, workload, lr, epochs] = expected[i];
    EXPECT_EQ(points[i].settings.ranks, ranks) << i;
    EXPECT_EQ(points[i].settings.workload, workload) << i;
    EXPECT_DOUBLE_EQ(points[i].settings.lr, lr) << i;
    EXPECT_EQ(points[i].settings.epochs, epochs) << i;
  }
  // Several groups: a list of objects, each its own axis.
  const auto two_groups = expand(parse_experiment(R"({"name": "z", "sweep": {"zip": [
      {"ranks": [1, 2], "batch_size": [4, 8]}, {"lr": [0.1, 0.2, 0.3], "epochs": [1, 2, 3]}]}})",
                                                  "exp.json"));
  EXPECT_EQ(two_groups.size(), 6U);
}

TEST(Experiment, ExcludeDropsMatchingCombinationsAndRepeatsRunTheSweepAgain) {
  const Experiment experiment = parse_experiment(R"({
      "name": "ex", "repeats": 2,
      "sweep": {"backend": ["allreduce", "ps"], "ranks": [1, 2, 4]},
      "exclude": [{"backend": "ps", "ranks": [1, 2.0]}]})",
                                                 "exp.json");
  const auto points = expand(experiment);
  // 6 combinations, 2 excluded, twice.
  ASSERT_EQ(points.size(), 8U);
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].index, static_cast<int>(i));
    EXPECT_EQ(points[i].repeat, i < 4 ? 0 : 1);
    EXPECT_FALSE(points[i].settings.backend == "ps" && points[i].settings.ranks < 4);
  }
  EXPECT_EQ(points[3].settings.backend, "ps");
  EXPECT_EQ(points[3].settings.ranks, 4);
  // A repeat has its own id and hash; the same settings in another position keep their hash.
  // (The second repeat runs backwards: points[7] repeats points[0].)
  EXPECT_EQ(PointKey(points[0].settings, 0), PointKey(points[7].settings, 0));
  EXPECT_NE(points[0].id.substr(5), points[7].id.substr(5));
  EXPECT_EQ(points[0].id.substr(5), PointKey(points[0].settings, 0).hash());
  EXPECT_EQ(points[0].key, PointKey(points[0].settings, 0));
  EXPECT_NE(points[0].key, points[7].key);
}

TEST(Experiment, EverySecondRepeatRunsTheSweepBackwardsSoNoPointAlwaysFollowsTheSameOne) {
  const auto points = expand(parse_experiment(
      R"({"name": "ab", "repeats": 3, "sweep": {"backend": ["allreduce", "ring"]}})", "e"));
  ASSERT_EQ(points.size(), 6U);
  const std::vector<std::pair<std::string, int>> expected = {
      {"allreduce", 0}, {"ring", 0}, {"ring", 1}, {"allreduce", 1}, {"allreduce", 2}, {"ring", 2}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].settings.backend, expected[i].first) << i;
    EXPECT_EQ(points[i].repeat, expected[i].second) << i;
    EXPECT_EQ(points[i].index, static_cast<int>(i));
    EXPECT_EQ(points[i].id.substr(0, 4), fmt::format("p{:03}", i));
  }
}

TEST(Experiment, BaselineIsReadAsNormalisedSettingValues) {
  const Experiment experiment = parse_experiment(
      R"({"name": "b", "baseline": {"backend": "allreduce", "ranks": 1.0},
          "sweep": {"backend": ["allreduce", "ring"], "ranks": [1, 2]}})",
      "exp.json");
  EXPECT_EQ(experiment.baseline, Json({{"backend", "allreduce"}, {"ranks", 1}}));
}

TEST(Experiment, WholeNumbersAreIntegersWhereverTheyAreWritten) {  // as in the settings and the schema
  EXPECT_EQ(parse_experiment(R"({"name": "r", "repeats": 2.0, "description": "two\nlines\tand a tab"})", "exp.json").repeats,
            2);
}

TEST(Experiment, NoSweepGivesOnePointWithDefaultsAndFixedSettings) {
  const auto points = expand(parse_experiment(R"({"name": "one", "settings": {"ranks": 2}})", "e"));
  ASSERT_EQ(points.size(), 1U);
  EXPECT_EQ(points[0].settings.ranks, 2);
  EXPECT_EQ(points[0].settings.workload, "iris_mlp");
  EXPECT_EQ(points[0].settings.backend, "allreduce");
}

TEST(Experiment, PointIdsAreDistinctAndDependOnlyOnSettings) {
  const char* text = R"({"name": "n", "sweep": {"ranks": [1, 2], "lr": [0.1, 0.2]}})";
  const auto first = expand(parse_experiment(text, "a.json"));
  const auto second = expand(parse_experiment(text, "b.json"));
  std::set<std::string> ids;
  for (std::size_t i = 0; i < first.size(); ++i) {
    ids.insert(first[i].id);
    EXPECT_EQ(first[i].id, second[i].id);
  }
  EXPECT_EQ(ids.size(), first.size());
}

TEST(Experiment, LauncherIsANameOrAnObjectWithOptions) {
  const Experiment named = parse_experiment(R"({"name": "x", "launcher": "local"})", "e.json");
  EXPECT_EQ(named.launcher.name, "local");
  EXPECT_EQ(named.launcher.where, "e.json: launcher");
  const Experiment object = parse_experiment(
      R"({"name": "x", "launcher": {"name": "local", "max_parallel": 2}})", "e.json");
  EXPECT_EQ(object.launcher.name, "local");
  EXPECT_EQ(object.launcher.options, Json({{"max_parallel", 2}}));
  EXPECT_EQ(parse_experiment(R"({"name": "x"})", "e.json").launcher.name, "local");
}

TEST(Experiment, IntegralFloatsAreAcceptedAsIntegers) {
  const auto points = expand(parse_experiment(R"({"name": "n", "settings": {"ranks": 2.0}})", "e"));
  EXPECT_EQ(points[0].settings.ranks, 2);
}

struct BadInput {
  const char* text;
  const char* expected_message;
};

void PrintTo(const BadInput& bad, std::ostream* out) { *out << bad.text; }

class ExperimentValidation : public ::testing::TestWithParam<BadInput> {};

TEST_P(ExperimentValidation, RejectsWithOneLineNamingFileAndField) {
  const std::string message = parse_error(GetParam().text);
  ASSERT_FALSE(message.empty()) << "accepted: " << GetParam().text;
  EXPECT_NE(message.find(GetParam().expected_message), std::string::npos) << message;
  EXPECT_EQ(message.rfind("exp.json: ", 0), 0U) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    BadFiles, ExperimentValidation,
    ::testing::Values(
        BadInput{R"({"name": "x", )", "exp.json: invalid JSON"},
        BadInput{R"([1, 2])", "expected a JSON object at the top level"},
        BadInput{R"({"sweep": {}})", "name: required key is missing"},
        BadInput{R"({"name": "a b"})", "name: expected up to 100 letters, digits"},
        BadInput{R"({"name": "x", "sweeps": {}})", "unknown key \"sweeps\" (did you mean \"sweep\"?)"},
        BadInput{R"({"name": "x", "settings": {"epoch": 3}})",
                 "settings.epoch: unknown setting \"epoch\" (did you mean \"epochs\"?)"},
        BadInput{R"({"name": "x", "sweep": {"ranks": [1, 2, "four"]}})",
                 "sweep.ranks[2]: expected a positive integer (at most 4096), got \"four\""},
        BadInput{R"({"name": "x", "sweep": {"ranks": []}})",
                 "sweep.ranks: expected a non-empty list of values, got []"},
        BadInput{R"({"name": "x", "sweep": {"ranks": 2}})",
                 "sweep.ranks: expected a non-empty list of values, got 2"},
        BadInput{R"({"name": "x", "sweep": {"ranks": [1, 1]}})", "sweep.ranks[1]: duplicate value"},
        BadInput{R"({"name": "x", "sweep": {"lr": [0.5, 1, 1.0]}})", "sweep.lr[2]: duplicate value 1.0"},
        BadInput{R"({"name": "x", "settings": {"ranks": 2}, "sweep": {"ranks": [1]}})",
                 "sweep.ranks: key is also in \"settings\""},
        BadInput{R"({"name": "x", "settings": {"batch_size": 0}})",
                 "settings.batch_size: expected a positive integer, got 0"},
        BadInput{R"({"name": "x", "settings": {"batch_size": 2.5}})",
                 "settings.batch_size: expected a positive integer, got 2.5"},
        BadInput{R"({"name": "x", "settings": {"lr": -1}})", "settings.lr: expected a positive number"},
        BadInput{R"({"name": "x", "settings": {"workload": 3}})",
                 "settings.workload: expected a workload name, got 3"},
        BadInput{R"({"name": "x", "settings": {"device": "tpu"}})",
                 "settings.device: expected \"cpu\" or \"cuda\", got \"tpu\""},
        BadInput{R"({"name": "x", "settings": []})", "settings: expected an object"},
        BadInput{R"({"name": "x", "launcher": 5})", "launcher: expected a launcher name, or an object"},
        BadInput{R"({"name": "x", "settings": {"seed": 9223372036854775808.0}})",
                 "settings.seed: expected a non-negative integer"},
        BadInput{R"({"name": "x", "settings": {"ps_server_trains": "yes"}})",
                 "settings.ps_server_trains: expected true or false, got \"yes\""},
        BadInput{R"({"name": "../up"})", "name: expected up to 100 letters"},
        BadInput{R"({"name": "x", "sweep": {"kind": ["train", "comm"]}})",
                 "sweep.kind: \"kind\" cannot be swept"},
        BadInput{R"({"name": "x", "settings": {"kind": "bench"}})",
                 "settings.kind: expected \"train\" or \"comm\", got \"bench\""},
        BadInput{R"({"name": "x", "settings": {"comm_max_bytes": 6}})",
                 "settings.comm_max_bytes: expected a positive multiple of 4"},
        BadInput{R"({"name": "x", "settings": {"comm_size_factor": 1}})",
                 "settings.comm_size_factor: expected an integer from 2 to 1024, got 1"},
        BadInput{R"({"name": "x", "sweep": {"zip": {"ranks": [1, 2], "lr": [0.1]}}})",
                 "sweep.zip.lr: expected 2 values, as many as sweep.zip.ranks, got 1"},
        BadInput{R"({"name": "x", "sweep": {"zip": {"ranks": [1, 1], "lr": [0.1, 0.1]}}})",
                 "sweep.zip: entry 1 repeats an earlier one ([1,0.1])"},
        BadInput{R"({"name": "x", "sweep": {"ranks": [1], "zip": {"ranks": [2]}}})",
                 "sweep.zip.ranks: key is swept twice"},
        BadInput{R"({"name": "x", "sweep": {"zip": [{"lr": [0.1]}, 3]}})",
                 "sweep.zip[1]: expected an object of equally long lists, got 3"},
        BadInput{R"({"name": "x", "sweep": {"zip": {"lr": [0.1, "fast"]}}})",
                 "sweep.zip.lr[1]: expected a positive number, got \"fast\""},
        BadInput{R"({"name": "x", "repeats": 0})", "repeats: expected an integer from 1 to 1000, got 0"},
        BadInput{R"({"name": "x", "repeats": "3"})", "repeats: expected an integer from 1 to 1000"},
        BadInput{R"({"name": "x", "exclude": {"ranks": 1}})", "exclude: expected a non-empty list of objects"},
        BadInput{R"({"name": "x", "exclude": [{}]})", "exclude[0]: expected an object of setting values, got {}"},
        BadInput{R"({"name": "x", "exclude": [{"rank": 1}]})",
                 "exclude[0].rank: unknown setting \"rank\" (did you mean \"ranks\"?)"},
        BadInput{R"({"name": "x", "exclude": [{"ranks": [1, -2]}]})",
                 "exclude[0].ranks[1]: expected a positive integer (at most 4096), got -2"},
        BadInput{R"({"name": "x", "baseline": {"backnd": "ps"}})",
                 "baseline.backnd: unknown setting \"backnd\" (did you mean \"backend\"?)"},
        BadInput{R"({"name": "x", "baseline": []})", "baseline: expected an object of setting values"},
        BadInput{R"({"name": "x", "description": "red \u001b[31m"})",
                 "description: expected text without control characters other than newlines and tabs, got "
                 "\"\\u001b\" at character 4"},
        BadInput{R"({"name": "x", "$schema": {"x": 1}})", "$schema: expected a string"},
        BadInput{R"({"name": "x", "repeats": 2.5})", "repeats: expected an integer from 1 to 1000, got 2.5"},
        BadInput{R"({"name": "x", "settings": {"epochs": 1}, "sweep": {"ranks": [1, 2]}, "baseline": {"epochs": 1}})",
                 "baseline.epochs: not swept; expected a setting that the sweep varies"},
        BadInput{R"({"name": "x", "convergence": {"loss_band": -1}})",
                 "convergence.loss_band: expected a non-negative number, got -1"},
        BadInput{R"({"name": "x", "convergence": {"accuracy_band": 150}})",
                 "convergence.accuracy_band: expected percentage points from 0 to 100, got 150"},
        BadInput{R"({"name": "x", "convergence": {"loss": 0.1}})",
                 "convergence: unknown key \"loss\""},
        BadInput{R"({"name": "x", "convergence": {}})",
                 "convergence: expected an object with \"loss_band\" and/or \"accuracy_band\", got {}"},
        // Json::parse's own errors other than syntax errors (here out_of_range.406).
        BadInput{R"({"name": "x", "settings": {"lr": 1e400}})",
                 "exp.json: invalid JSON: number overflow parsing '1e400' at line 1, column 34"},
        // Json::parse keeps the last of repeated keys; the file's author meant one of them.
        BadInput{R"({"name": "x", "name": "y"})",
                 "exp.json: name: duplicate key \"name\"; expected each key once in an object"},
        BadInput{R"({"name": "x", "settings": {"epochs": 1, "epochs": 2}})",
                 "exp.json: settings.epochs: duplicate key \"epochs\""},
        BadInput{R"({"name": "x", "exclude": [{"ranks": 1}, {"ranks": 2, "ranks": 3}]})",
                 "exp.json: exclude[1].ranks: duplicate key \"ranks\""},
        BadInput{R"({"name": "x", "sweep": {"zip": []}})",
                 "sweep.zip: expected an object of equally long lists, or a non-empty list of such "
                 "objects, got []"},
        BadInput{R"({"name": "x", "settings": {"a\nb": 1}})",
                 "exp.json: settings: expected keys of up to 100 characters without control "
                 "characters, got \"a\\nb\""},
        BadInput{R"({"name": "x", "settings": {"shm_reduce_threads": 0}})",
                 "settings.shm_reduce_threads: expected \"auto\" or an integer from 1 to 256, got 0"},
        BadInput{R"({"name": "x", "sweep": {"shm_reduce_threads": [1, 257]}})",
                 "shm_reduce_threads[1]: expected \"auto\" or an integer from 1 to 256, got 257"},
        BadInput{R"({"name": "x", "settings": {"shm_copy_engine_gathers": "yes"}})",
                 "settings.shm_copy_engine_gathers: expected \"auto\", true or false, got \"yes\""},
        BadInput{R"({"name": "x", "settings": {"staging_chunk_bytes": 4094}})",
                 "settings.staging_chunk_bytes: expected a multiple of 4 bytes from 4096 to 1073741824, got 4094"},
        BadInput{R"({"name": "x", "sweep": {"staging_chunk_bytes": [4194304, 4194305]}})",
                 "staging_chunk_bytes[1]: expected a multiple of 4 bytes from 4096 to 1073741824, got 4194305"},
        BadInput{R"({"name": "x", "settings": {"data_path": "a\nb"}})",
                 "settings.data_path: expected a path (at most 4096 bytes, no control characters), "
                 "got \"a\\nb\""}));

// Json's recursive functions (dump, copies) overflowed the stack on such a file (exit 139).
TEST(Experiment, NestingDeeperThanTheLimitIsRejectedWithoutCrashing) {
  const std::size_t depth = 100000;
  const std::string deep = R"({"name": "x", "description": )" + std::string(depth, '[') +
                           std::string(depth, ']') + "}";
  EXPECT_EQ(parse_error(deep),
            "exp.json: description[0][0][0]...: expected lists and objects nested at most 256 "
            "deep, got deeper");
  // 255 lists under the top-level object make 256 levels: allowed (and then the wrong type).
  const std::string at_limit = R"({"name": "x", "description": )" + std::string(255, '[') +
                               std::string(255, ']') + "}";
  EXPECT_NE(parse_error(at_limit).find("exp.json: description: expected a string"),
            std::string::npos)
      << parse_error(at_limit);
}

TEST(Experiment, BracketsInsideStringsAreNotNesting) {
  const std::string brackets = std::string(1000, '[') + R"(\"[\\[{)" + std::string(1000, '{');
  const Experiment experiment =
      parse_experiment(R"({"name": "x", "description": ")" + brackets + "\"}", "exp.json");
  EXPECT_EQ(experiment.description.size(), 2005U);
}

TEST(Experiment, DirectoryIsNotAnExperimentFile) {
  const std::string directory = ::testing::TempDir();
  try {
    load_experiment(directory);
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              directory + ": is a directory, expected an experiment file (JSON)");
  }
}

TEST(Experiment, VeryLongNamesAreRejectedWithoutCrashing) {
  const std::string name(50000, 'a');
  EXPECT_NE(parse_error(R"({"name": ")" + name + "\"}").find("name: expected up to 100"),
            std::string::npos);
}

TEST(Experiment, SweepsBeyondTheLimitAreRejectedBeforeExpanding) {
  std::string values;
  for (int i = 1; i <= 30; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
  const std::string text = R"({"name": "big", "sweep": {"ranks": [)" + values +
                           R"(], "batch_size": [)" + values + R"(], "epochs": [)" + values + "]}}";
  try {
    expand(parse_experiment(text, "exp.json"));
    FAIL() << "27000 points accepted";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("sweep: expected at most 10000 points"),
              std::string::npos)
        << error.what();
  }
}

// Refused at its length, not after checking each value against those before it (54 s for 200,000).
TEST(Experiment, AListLongerThanTheLimitOnPointsIsRefusedAtItsLength) {
  std::string values;
  for (int i = 1; i <= 10001; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
  const std::string message = parse_error(R"({"name": "long", "sweep": {"seed": [)" + values + "]}}");
  EXPECT_NE(message.find("sweep.seed: expected at most 10000 values (the limit on points in all), got 10001"),
            std::string::npos)
      << message;
  // At the limit the list is read, each value checked once.
  values.resize(values.rfind(", "));
  EXPECT_EQ(expand(parse_experiment(R"({"name": "long", "sweep": {"seed": [)" + values + "]}}", "exp.json")).size(),
            10000U);
}

TEST(Experiment, MissingFileIsAConfigError) {
  try {
    load_experiment("/nonexistent/experiment.json");
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "/nonexistent/experiment.json: cannot open experiment file");
  }
}

}  // namespace
}  // namespace harness
