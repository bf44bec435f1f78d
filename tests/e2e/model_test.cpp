// End to end: `harness model` fits the cost model to a real comm run (with its memory probes) and
// predicts a real training run; every results directory gets a self-contained report.html. (The
// page itself is opened in a browser by tests/browser.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "e2e_helpers.h"
#include "harness/common/files.h"

namespace harness::e2e {
namespace {

struct Runs {
  fs::path dir, comm, train;
};

// A small comm run (two backends, 4 B to 1 MiB, 2 ranks; the ring at every size, without its
// crossover to MPI_Allreduce, so that it has sizes of its own to fit) and a traced training run at 1 and 2
// ranks, made once for the tests of this file.
const Runs& runs() {
  static const Runs made = [] {
    Runs r;
    r.dir = scratch("model");
    const fs::path comm_dir = r.dir / "comm_experiment";
    fs::create_directories(comm_dir);
    const fs::path comm = write_experiment(comm_dir, R"({
      "name": "model_comm",
      "settings": {"kind": "comm", "ranks": 2, "comm_min_bytes": 4, "comm_max_bytes": 1048576,
                   "comm_size_factor": 16, "comm_iterations": 5, "comm_warmup_iterations": 2,
                   "ring_allreduce_below_chunk_bytes": 0},
      "sweep": {"backend": ["allreduce", "ring"]}})");
    r.comm = r.dir / "comm";
    HarnessRun run = run_harness({"run", comm.string(), "--out", r.comm.string()}, r.dir / "comm.log");
    EXPECT_TRUE(run.outcome.ok()) << joined(run.output);
    const fs::path train = write_experiment(r.dir, R"({
      "name": "model_train",
      "settings": {"workload": "iris_mlp", "epochs": 2, "batch_size": 4, "lr": 0.5, "threads_per_rank": 1},
      "sweep": {"ranks": [1, 2]}})");
    r.train = r.dir / "train";
    run = run_harness({"run", train.string(), "--out", r.train.string(), "--timeline"}, r.dir / "train.log");
    EXPECT_TRUE(run.outcome.ok()) << joined(run.output);
    return r;
  }();
  return made;
}

TEST(Model, CommRecordsCarryTheMemoryProbes) {
  for (const auto& row : read_csv(runs().comm / "summary.csv")) {
    const Json record = read_json_file((runs().comm / "points" / (row.at("id") + ".json")).string());
    const Json& sizes = record["measurements"]["sizes"];
    ASSERT_EQ(sizes.size(), 6U);  // 4 B, 64 B, ..., 1 MiB
    for (const auto& size : sizes) {
      EXPECT_GT(size["reduce_probe_us"].get<double>(), 0) << size;
      EXPECT_GT(size["copy_probe_us"].get<double>(), 0) << size;
    }
    // A megabyte takes longer to add than 4 bytes.
    EXPECT_GT(sizes.back()["reduce_probe_us"].get<double>(), 10 * sizes.front()["reduce_probe_us"].get<double>());
  }
}

TEST(Model, FitsEveryBackendAndPredictsTheTrainingRun) {
  const HarnessRun run = run_harness({"model", runs().comm.string(), "--predict", runs().train.string(), "--ranks",
                                      "1,2,8"},
                                     runs().dir / "model.log");
  ASSERT_TRUE(run.outcome.ok()) << run.outcome.describe() << "\n" << joined(run.output);
  const std::string console = joined(run.output);
  for (const char* expected : {"alpha", "ns/B", "Residuals by message size", "allreduce p=2", "Assumptions:",
                               "shared one host", "iris_mlp allreduce"}) {
    EXPECT_NE(console.find(expected), std::string::npos) << expected << "\n" << console;
  }

  const Json model = read_json_file((runs().comm / "model.json").string());
  ASSERT_EQ(model["backends"].size(), 2U);
  for (const auto& fit : model["backends"]) {
    EXPECT_GE(fit["alpha_us"].get<double>(), 0) << fit["backend"];
    EXPECT_GT(fit["beta_ns_per_byte"].get<double>(), 0) << fit["backend"];
    EXPECT_GT(fit["gamma_ns_per_byte"].get<double>(), 0) << fit["backend"];
    EXPECT_EQ(fit["residuals"].size(), 6U) << fit["backend"];
  }
  EXPECT_EQ(model["hosts"], 1);

  const auto rows = read_csv(runs().train / "prediction.csv");
  ASSERT_EQ(rows.size(), 3U);  // ranks 1, 2 (also measured) and 8
  EXPECT_EQ(rows[0].at("ranks"), "1");
  EXPECT_DOUBLE_EQ(std::stod(rows[0].at("comm_s")), 0.0);
  EXPECT_NEAR(std::stod(rows[0].at("efficiency")), 1.0, 1e-9);
  EXPECT_EQ(rows[1].at("ranks"), "2");
  EXPECT_GT(std::stod(rows[1].at("comm_s")), 0);
  EXPECT_FALSE(rows[1].at("measured_comm_s").empty());
  EXPECT_FALSE(rows[1].at("measured_speedup").empty());
  EXPECT_TRUE(rows[2].at("measured_comm_s").empty());
  // The comm run had 2 ranks: 8 is beyond it, and said so.
  EXPECT_EQ(rows[1].at("extrapolated"), "false");
  EXPECT_EQ(rows[2].at("extrapolated"), "true");
  EXPECT_NE(console.find("fit beyond:"), std::string::npos) << console;
  // More ranks, more communication per step.
  EXPECT_GT(std::stod(rows[2].at("comm_s")), std::stod(rows[1].at("comm_s")));
  for (const fs::path& image : {runs().comm / "plots" / "model_fit.svg", runs().train / "plots" / "prediction.svg"}) {
    EXPECT_GT(fs::file_size(image), 1000U) << image;
  }
}

TEST(Model, TheWrongRunsAreRefusedWithAOneLineReason) {
  HarnessRun run = run_harness({"model", runs().train.string()}, runs().dir / "refused.log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  EXPECT_NE(joined(run.output).find("not a comm benchmark's results"), std::string::npos) << joined(run.output);
  run = run_harness({"model", runs().comm.string(), "--predict", runs().comm.string()}, runs().dir / "refused.log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  EXPECT_NE(joined(run.output).find("not a training run"), std::string::npos) << joined(run.output);
  run = run_harness({"model", (runs().dir / "nowhere").string()}, runs().dir / "refused.log");
  EXPECT_EQ(run.outcome.exit_code, 2);
  EXPECT_NE(joined(run.output).find("not a results directory"), std::string::npos) << joined(run.output);
  run = run_harness({"model", runs().comm.string(), "--ranks", "0"}, runs().dir / "refused.log");
  EXPECT_EQ(run.outcome.exit_code, 2);
}

// A comm run whose records give the fit nothing to fit (one rank, nothing to exchange) is the
// input's fault, as a wrong directory is: exit 2 with the reason, not 1 as for a failure.
TEST(Model, ARunItCannotFitIsRefusedWithExitTwo) {
  const fs::path dir = runs().dir / "one_rank";
  fs::create_directories(dir);
  const fs::path experiment = write_experiment(dir, R"({
      "name": "one_rank", "settings": {"kind": "comm", "ranks": 1, "backend": "allreduce", "comm_min_bytes": 4,
      "comm_max_bytes": 64, "comm_size_factor": 16, "comm_iterations": 2, "comm_warmup_iterations": 1}})");
  HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log");
  ASSERT_TRUE(run.outcome.ok()) << explained(run);
  run = run_harness({"model", (dir / "out").string()}, dir / "model.log");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find("allreduce: no comm record with 2 or more ranks to fit"), std::string::npos)
      << run.output[0];
}

TEST(Model, ARefusedPredictionWritesNothing) {
  // A copy of the comm run without the model's files: a --predict of the wrong kind must leave it so.
  const fs::path comm = runs().dir / "predict_refused";
  fs::remove_all(comm);
  fs::copy(runs().comm, comm, fs::copy_options::recursive);
  for (const fs::path& file : {comm / "model.json", comm / "model.csv", comm / "plots" / "model_fit.svg",
                               comm / "plots" / "model_fit.png"}) {
    fs::remove(file);
  }
  const bool had_page = fs::exists(comm / "report.html");
  const auto page_time = had_page ? fs::last_write_time(comm / "report.html") : fs::file_time_type{};
  const HarnessRun run = run_harness({"model", comm.string(), "--predict", comm.string()}, runs().dir / "refused.log");
  EXPECT_EQ(run.outcome.exit_code, 2) << joined(run.output);
  EXPECT_NE(joined(run.output).find("not a training run"), std::string::npos) << joined(run.output);
  for (const fs::path& file : {comm / "model.json", comm / "model.csv", comm / "plots" / "model_fit.svg"}) {
    EXPECT_FALSE(fs::exists(file)) << file;
  }
  EXPECT_EQ(fs::exists(comm / "report.html"), had_page);
  if (had_page) {
    EXPECT_EQ(fs::last_write_time(comm / "report.html"), page_time);
  }
}

// A damaged record is refused with its name, as `harness plot` refuses it: a fit that left it out
// would lose that backend's line without a word.
TEST(Model, ADamagedRecordIsRefusedNotLeftOut) {
  const fs::path comm = runs().dir / "damaged";
  fs::remove_all(comm);
  fs::copy(runs().comm, comm, fs::copy_options::recursive);
  fs::remove(comm / "model.json");
  const auto records = std::vector<fs::directory_entry>(fs::directory_iterator(comm / "points"), {});
  ASSERT_EQ(records.size(), 2U);
  Json damaged = read_json_file(records[0].path().string());
  damaged["measurements"]["sizes"][1].erase("copy_probe_us");
  std::ofstream(records[0].path()) << damaged.dump();

  const HarnessRun run = run_harness({"model", comm.string()}, runs().dir / "damaged.log");
  EXPECT_EQ(run.outcome.exit_code, 1) << joined(run.output);
  ASSERT_EQ(run.output.size(), 1U) << joined(run.output);
  EXPECT_NE(run.output[0].find(records[0].path().filename().string() + ": not a readable point record"),
            std::string::npos)
      << run.output[0];
  EXPECT_NE(run.output[0].find("copy_probe_us is missing"), std::string::npos) << run.output[0];
  EXPECT_FALSE(fs::exists(comm / "model.json"));
}

// report.html needs nothing from the network and links only to files that exist.
TEST(Report, EveryResultsDirectoryHasASelfContainedPage) {
  for (const fs::path& dir : {runs().comm, runs().train}) {
    const std::string html = read_text(dir / "report.html");
    ASSERT_FALSE(html.empty()) << dir;
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    EXPECT_EQ(html.find(" src="), std::string::npos);
    EXPECT_NE(html.find("<svg class=\"plot\""), std::string::npos);
    EXPECT_NE(html.find("Open MPI"), std::string::npos);  // provenance: the MPI library
    std::size_t at = 0;
    while ((at = html.find("href=\"", at)) != std::string::npos) {
      at += 6;
      const std::string target = html.substr(at, html.find('"', at) - at);
      if (target.starts_with("#")) continue;
      EXPECT_TRUE(fs::exists(dir / target)) << dir << ": " << target;
    }
  }
  // The traced run draws its timeline and links each point's trace.
  const std::string train = read_text(runs().train / "report.html");
  EXPECT_NE(train.find("id=\"plot-timeline\""), std::string::npos);
  EXPECT_NE(train.find(".trace.json\">timeline</a>"), std::string::npos);
  // `harness plot` rebuilds it.
  fs::remove(runs().train / "report.html");
  const HarnessRun run = run_harness({"plot", runs().train.string()}, runs().dir / "plot.log");
  ASSERT_TRUE(run.outcome.ok()) << joined(run.output);
  EXPECT_TRUE(fs::exists(runs().train / "report.html"));
}

}  // namespace
}  // namespace harness::e2e
