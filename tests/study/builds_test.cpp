// Several builds in one sweep (study/builds.h): the "builds" block, the `build` axis it adds, what
// a build says of itself, the settings each build's worker gets, and the points refused because a
// build lacks what they ask for.
#include "harness/study/builds.h"

#include <gtest/gtest.h>

#include "harness/common/errors.h"
#include "parse_error.h"

namespace harness {
namespace {


constexpr const char* kTwoBuilds = R"({"name": "ab", "builds": {"base": "build-base/harness", "head": "build/harness"},
    "settings": {"kind": "comm", "ranks": 2}, "sweep": {"backend": ["allreduce", "ring"]}, "repeats": 2})";

TEST(Builds, NamedBuildsAreSweptLastSoThatEachConfigurationsBuildsRunBackToBackEachFirstInTurn) {
  const Experiment experiment = parse_experiment(kTwoBuilds, "exp.json");
  ASSERT_EQ(experiment.builds.size(), 2U);
  EXPECT_EQ(experiment.builds[0].name, "base");
  EXPECT_EQ(experiment.builds[0].path, "build-base/harness");
  EXPECT_EQ(experiment.builds[0].where, "exp.json: builds.base");
  ASSERT_EQ(experiment.sweep.size(), 2U);
  EXPECT_EQ(experiment.sweep.back().key, "build");
  const std::vector<Point> points = expand(experiment);
  ASSERT_EQ(points.size(), 8U);
  // The second repeat runs backwards: head before base (docs/ci-gate.md says why).
  const std::vector<std::pair<std::string, std::string>> order = {
      {"allreduce", "base"}, {"allreduce", "head"}, {"ring", "base"}, {"ring", "head"},
      {"ring", "head"},      {"ring", "base"},      {"allreduce", "head"}, {"allreduce", "base"}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].settings.backend, order[i].first) << i;
    EXPECT_EQ(points[i].settings.build, order[i].second) << i;
    EXPECT_EQ(points[i].repeat, static_cast<int>(i / 4));
  }
  EXPECT_NE(points[0].key, points[1].key);
  EXPECT_EQ(to_json(points[1].settings)["build"], "head");
}

TEST(Builds, ASweptOrFixedBuildIsKeptAndAPointOfTheRunningHarnessKeepsItsOldKey) {
  const Experiment zipped = parse_experiment(R"({"name": "ab", "builds": {"base": "b", "head": "h"},
      "sweep": {"zip": {"build": ["base", "head"], "inject_comm_delay_us": [0, 20]}}})",
                                             "exp.json");
  const std::vector<Point> points = expand(zipped);
  ASSERT_EQ(points.size(), 2U);  // no second build axis
  EXPECT_EQ(points[1].settings.build, "head");
  EXPECT_EQ(points[1].settings.inject_comm_delay_us, 20);
  const Experiment fixed = parse_experiment(R"({"name": "b", "builds": {"base": "b", "head": "h"},
      "settings": {"build": "base"}})",
                                            "exp.json");
  EXPECT_EQ(expand(fixed).size(), 1U);
  // "" is the running harness, set as much as a name is: no build axis is added.
  const Experiment running = parse_experiment(R"({"name": "b", "builds": {"base": "b", "head": "h"},
      "settings": {"build": ""}})",
                                              "exp.json");
  ASSERT_EQ(expand(running).size(), 1U);
  EXPECT_EQ(expand(running)[0].settings.build, "");

  // Without builds, a point's key (and so its id, and every results directory written before
  // builds existed) does not mention them.
  const PointSettings plain;
  EXPECT_EQ(PointKey(plain, 0).text().find("build"), std::string::npos);
  PointSettings built = plain;
  built.build = "base";
  EXPECT_NE(PointKey(built, 0).text().find(R"("build":"base")"), std::string::npos);
}

TEST(Builds, PointsWithoutBuildsKeepTheIdsTheyHadBeforeBuildsExisted) {
  // experiments/ci-comm.json as harness 0.3.0 at 31f404a expanded it (its first point's record was
  // p000-194f1a71.json). A new setting with a default that shows in the key changes every id.
  const Experiment experiment = parse_experiment(R"({"name": "ci-comm", "settings": {"kind": "comm", "ranks": 2,
      "threads_per_rank": 1, "comm_min_bytes": 4096, "comm_max_bytes": 4194304, "comm_size_factor": 4,
      "comm_iterations": 20, "comm_warmup_iterations": 5, "ps_server_trains": true},
      "sweep": {"backend": ["allreduce", "ring", "ps", "shm", "hier"]}, "repeats": 5})",
                                                 "ci-comm.json");
  const std::vector<Point> points = expand(experiment);
  EXPECT_EQ(points[0].id, "p000-194f1a71");
  EXPECT_EQ(points[1].id, "p001-ef4e4dce");
}

TEST(Builds, AnUnknownBuildOrABadBlockIsOneLineNamingTheField) {
  EXPECT_EQ(parse_error(R"({"name": "x", "builds": {"base": "b"}, "sweep": {"build": ["base", "hed"]}})"),
            "exp.json: sweep.build[1]: unknown build \"hed\"; expected one of the builds named in the experiment (base), or \"\" "
            "for the running harness");
  EXPECT_EQ(parse_error(R"({"name": "x", "settings": {"build": "base"}})"),
            "exp.json: settings.build: unknown build \"base\"; expected no build name: the experiment names no builds "
            "(add \"builds\": {\"NAME\": \"PATH\"} or run with --build NAME=PATH)");
  // Builds that the command line names (--build base=... --build head=...) may be swept by a file
  // that names none; names neither gives are still refused, listing both.
  const Experiment swept = parse_experiment(R"({"name": "x", "sweep": {"build": ["base", "head"]}})", "exp.json",
                                            {"base", "head"});
  ASSERT_EQ(swept.sweep.size(), 1U);
  EXPECT_EQ(swept.sweep[0].values.size(), 2U);
  try {
    parse_experiment(R"({"name": "x", "builds": {"base": "b"}, "sweep": {"build": ["base", "hed"]}})", "exp.json",
                     {"head"});
    ADD_FAILURE() << "a build named nowhere was accepted";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(),
                 "exp.json: sweep.build[1]: unknown build \"hed\"; expected one of the builds named in the experiment "
                 "or with --build (base, head), or \"\" for the running harness");
  }
  EXPECT_NE(parse_error(R"({"name": "x", "builds": ["build/harness"]})").find("exp.json: builds: expected an object"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"name": "x", "builds": {}})").find("exp.json: builds: expected an object of 1 to 16"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"name": "x", "builds": {"../up": "h"}})").find("exp.json: builds: unknown build name \"../up\""),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"name": "x", "builds": {"base": ""}})").find("exp.json: builds.base: expected the path"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"name": "x", "builds": {"base": "b"}, "settings": {"build": "a b"}})")
                .find("exp.json: settings.build: expected a build name"),
            std::string::npos);
}

// What `harness --version` and `harness schema` print, cut to what a probe reads.
constexpr const char* kSchema = R"({"$defs": {"settings": {"properties": {
    "kind": {"default": "train"}, "backend": {"enum": ["allreduce", "ring"], "default": "allreduce"},
    "workload": {"enum": ["iris_mlp"]}, "ranks": {"default": 1}, "comm_min_bytes": {"default": 8}}}}})";

TEST(Builds, ABuildSaysWhatItIsAndWhatItTakes) {
  const BuildFacts facts = parse_build_facts("harness 0.3.0 (31f404aaadb3)\n", kSchema, "--build base");
  EXPECT_EQ(facts.version, "0.3.0");
  EXPECT_EQ(facts.commit, "31f404aaadb3");
  EXPECT_EQ(facts.settings, (std::set<std::string>{"kind", "backend", "workload", "ranks", "comm_min_bytes"}));
  EXPECT_EQ(facts.backends, (std::set<std::string>{"allreduce", "ring"}));
  EXPECT_EQ(facts.defaults, Json::parse(R"({"kind": "train", "backend": "allreduce", "ranks": 1, "comm_min_bytes": 8})"));

  const auto error_of = [](const std::string& version, const std::string& schema) {
    try {
      parse_build_facts(version, schema, "--build base");
    } catch (const ConfigError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of("GNU bash, version 5.2.15\n", kSchema),
            "--build base: not a harness binary: --version printed \"GNU bash, version 5.2.15\", expected \"harness "
            "VERSION (COMMIT)\"");
  EXPECT_NE(error_of("harness 0.3.0 (abc)\n", "Usage: ...").find("`schema` printed no JSON Schema"), std::string::npos);
  EXPECT_NE(error_of("harness 0.3.0 (abc)\n", "{}").find("its schema lists no settings"), std::string::npos);
}

// A named build runs every setting the experiment leaves alone at its own default: were it sent
// the running harness's defaults, a default changed in head would be applied to base too, and the
// gate could not see what the change costs.
TEST(Builds, ANamedBuildGetsOnlyWhatTheExperimentSetsAndTheLaunchDecides) {
  const Experiment experiment = parse_experiment(R"({"name": "ab", "builds": {"base": "b"},
      "settings": {"kind": "comm", "comm_min_bytes": 4096}, "sweep": {"backend": ["allreduce", "ring"]}})",
                                                 "exp.json");
  EXPECT_EQ(experiment.set_keys, (std::set<std::string>{"kind", "comm_min_bytes", "backend"}));
  const std::vector<Point> points = expand(experiment);
  const Point& point = points.at(1);
  ASSERT_EQ(point.settings.build, "base");
  const Json own = worker_settings(point.settings, nullptr, experiment.set_keys);
  EXPECT_FALSE(own.contains("build"));  // the worker is the build
  EXPECT_TRUE(own.contains("timeline"));
  EXPECT_TRUE(own.contains("comm_iterations"));  // the running harness's own worker: every setting it reads
  EXPECT_FALSE(own.contains("resnet_depth"));    // (a workload's are not a comm point's)
  EXPECT_FALSE(own.contains("sync_every"));
  const BuildFacts facts = parse_build_facts("harness 0.3.0 (abc)", kSchema, "b");
  const Json sent = worker_settings(point.settings, &facts, experiment.set_keys);
  // kind, comm_min_bytes and backend are set; ranks is the launch's and workload names the
  // configuration (comm_iterations and the rest are settings base does not know).
  EXPECT_EQ(sent, Json::parse(R"({"kind": "comm", "workload": "iris_mlp", "backend": "ring", "ranks": 1,
                                  "comm_min_bytes": 4096})"));
  // Its defaults, in the order its schema lists them, with what it was sent over them.
  EXPECT_EQ(settings_run_by(facts, sent), Json::parse(R"({"kind": "comm", "backend": "ring", "ranks": 1,
                                                          "comm_min_bytes": 4096, "workload": "iris_mlp"})"));
  // A default of base's own that the experiment leaves alone is what base runs with.
  const Json unset = worker_settings(point.settings, &facts, {"kind", "backend"});
  EXPECT_FALSE(unset.contains("comm_min_bytes"));
  EXPECT_EQ(settings_run_by(facts, unset)["comm_min_bytes"], 8);
}

TEST(Builds, AnOddRepeatCountOfBuildsRunBackToBackIsWarnedOf) {
  const auto warning = [](const std::string& repeats, const std::string& sweep) {
    return build_order_warning(parse_experiment(
        R"({"name": "ab", "builds": {"base": "b", "head": "h"}, "repeats": )" + repeats + sweep + "}", "exp.json"));
  };
  EXPECT_EQ(warning("5", ""),
            "exp.json: repeats 5 with the builds of each configuration run back to back: every second repeat runs "
            "them in the other order, so with an odd count head runs second in 3 of 5 pairs, and the second point of "
            "a pair can run slower (docs/ci-gate.md); use an even number of repeats");
  EXPECT_EQ(warning("6", ""), "");
  EXPECT_EQ(warning("1", ""), "");
  // Zipped with the delay, last: still pairs. Swept first: no pairs, no warning.
  EXPECT_NE(warning("3", R"(, "sweep": {"zip": {"build": ["base", "head"], "inject_comm_delay_us": [0, 5]}})"), "");
  EXPECT_EQ(warning("3", R"(, "settings": {"kind": "comm"},
                             "sweep": {"build": ["base", "head"], "backend": ["allreduce", "ring"]})"),
            "");
}

TEST(Builds, APointAskingForWhatItsBuildLacksIsRefusedBeforeLaunch) {
  const Experiment experiment = parse_experiment(R"({"name": "ab", "builds": {"base": "b", "head": "h"},
      "settings": {"kind": "comm", "ranks": 2}, "sweep": {"backend": ["allreduce", "shm"]}})",
                                                 "exp.json");
  const std::vector<Point> points = expand(experiment);
  std::map<std::string, BuildFacts> facts = {{"base", parse_build_facts("harness 0.3.0 (abc)", kSchema, "b")}};
  try {
    validate_builds(experiment, points, facts);
    FAIL() << "shm is not a backend of base";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "exp.json: sweep.backend[1]: build base (harness 0.3.0, abc) has no backend \"shm\" (it "
                               "has allreduce, ring)");
  }
  // A setting the build does not know may keep its default, not change it.
  const Experiment delayed = parse_experiment(R"({"name": "ab", "builds": {"base": "b"},
      "settings": {"kind": "comm", "ranks": 2, "comm_iterations": 30}})",
                                              "exp.json");
  try {
    validate_builds(delayed, expand(delayed), facts);
    FAIL() << "base has no comm_iterations";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "exp.json: settings.comm_iterations: build base (harness 0.3.0, abc) has no setting "
                               "comm_iterations; its points must leave it at its default (20)");
  }
}

}  // namespace
}  // namespace harness
