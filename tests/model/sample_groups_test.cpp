// What one fit of the cost model may pool: records with an injected delay are left out (and
// said to be), and a backend's one-node and multi-node records are fitted apart.
#include "harness/model/sample_groups.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/model/model_report.h"

namespace harness {
namespace {

// An ok comm record of `backend` at 2 ranks on `hosts`, 4 KiB and 64 KiB.
PointRecord comm_record(const std::string& backend, const std::vector<std::string>& hosts, int delay_us = 0) {
  PointRecord record;
  record.status = PointStatus::kOk;
  record.settings.kind = Kind::kComm;
  record.settings.ranks = static_cast<int>(hosts.size());
  record.settings.backend = backend;
  record.settings.inject_comm_delay_us = delay_us;
  // The ring at every size, so that its samples are its own (the crossover has a test of its own).
  if (backend == "ring") record.settings.options["ring_allreduce_below_chunk_bytes"] = 0;
  Measurements measurements;
  measurements.kind = Kind::kComm;
  measurements.hosts = hosts;
  CommMeasurements comm;
  for (const int64_t bytes : {int64_t{4096}, int64_t{65536}}) {
    MessageSizeMetrics size;
    size.bytes = bytes;
    size.time_us_median = 10 + 1e-3 * static_cast<double>(bytes) + delay_us;
    size.reduce_probe_us = 1e-4 * static_cast<double>(bytes);
    comm.sizes.push_back(size);
  }
  measurements.comm = comm;
  record.measurements = measurements;
  return record;
}

TEST(SampleGroups, OneNodeAndMultiNodeRecordsOfABackendAreFittedApart) {
  const PointRecord one_node = comm_record("ring", {"a", "a"});
  const PointRecord two_nodes = comm_record("ring", {"a", "b"});
  const PointRecord other = comm_record("allreduce", {"a", "a"});
  const SampleGroups groups = group_cost_samples({&one_node, &two_nodes, &other}, "comm");
  ASSERT_EQ(groups.groups.size(), 3U);
  EXPECT_EQ(groups.groups[0].backend, "ring");
  EXPECT_FALSE(groups.groups[0].across_nodes);
  EXPECT_EQ(groups.groups[1].backend, "ring");
  EXPECT_TRUE(groups.groups[1].across_nodes);
  EXPECT_EQ(groups.groups[2].backend, "allreduce");
  for (const SampleGroup& group : groups.groups) EXPECT_EQ(group.samples.size(), 2U) << group.backend;
  // The one-node fit holds the one-node times only.
  EXPECT_DOUBLE_EQ(groups.groups[0].samples[0].time_s, 1e-6 * (10 + 4.096));
  EXPECT_EQ(group_label("ring", true), "ring across nodes");
  EXPECT_EQ(group_label("ring", false), "ring");
  EXPECT_TRUE(groups.left_out.empty());
  EXPECT_EQ(groups.hosts.size(), 2U);
}

// Base and head of a two-build run are two codes: a fit each, never their times averaged.
TEST(SampleGroups, EachBuildIsFittedApart) {
  PointRecord base = comm_record("ring", {"a", "a"});
  base.settings.build = "base";
  PointRecord head = comm_record("ring", {"a", "a"});
  head.settings.build = "head";
  for (auto& size : head.measurements->comm->sizes) size.time_us_median *= 2;
  const SampleGroups groups = group_cost_samples({&base, &head}, "comm");
  ASSERT_EQ(groups.groups.size(), 2U);
  EXPECT_EQ(groups.groups[0].build, "base");
  EXPECT_EQ(groups.groups[1].build, "head");
  EXPECT_DOUBLE_EQ(groups.groups[1].samples[0].time_s, 2 * groups.groups[0].samples[0].time_s);
  EXPECT_EQ(group_label("ring", false, "head"), "ring, build head");

  // A prediction takes the fits of the training run's build; a run of several, or of another, is
  // refused in one line.
  CostModel model;
  model.comm_dir = "comm";
  for (const char* build : {"base", "head"}) {
    BackendCostFit fit;
    fit.backend = "ring";
    fit.build = build;
    fit.parameters.alpha_s = build == std::string("head") ? 2e-6 : 1e-6;
    model.fits.push_back(fit);
  }
  std::vector<std::string> notes;
  EXPECT_DOUBLE_EQ(prediction_fits(model, {"head"}, notes).at("ring").parameters.alpha_s, 2e-6);
  EXPECT_DOUBLE_EQ(prediction_fits(model, {"base"}, notes).at("ring").parameters.alpha_s, 1e-6);
  try {
    prediction_fits(model, {"base", "head"}, notes);
    ADD_FAILURE() << "predicted a run of two builds";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "--predict: comm fitted 2 builds (base, head): expected a training run of one of them, "
                               "got a run of build(s) base, head");
  }
  EXPECT_THROW(prediction_fits(model, {""}, notes), ConfigError);
}

// A named build ran the settings the experiment left alone at its own defaults, which its record
// keeps: those decide which sizes it handed to MPI, not the running harness's view.
TEST(SampleGroups, ABuildsOwnSettingsDecideWhatItHandedToMpi) {
  PointRecord base = comm_record("ring", {"a", "a"});
  base.settings.build = "base";
  base.settings.options.erase("ring_allreduce_below_chunk_bytes");  // the record's view: 512 KiB
  PointSettings ran = base.settings;
  ran.options["ring_allreduce_below_chunk_bytes"] = 0;  // base's own default: the ring at every size
  base.build = BuildProvenance{"base", "/b", "0.3.0", "abc", ""};
  base.build->settings = to_json(ran);
  const SampleGroups groups = group_cost_samples({&base}, "comm");
  ASSERT_EQ(groups.groups.size(), 1U);
  EXPECT_EQ(groups.groups[0].samples.size(), 2U);
  EXPECT_TRUE(groups.left_out.empty());
}

TEST(SampleGroups, RecordsWithAnInjectedDelayAreLeftOutAndSaidToBe) {
  const PointRecord plain = comm_record("ring", {"a", "a"});
  const PointRecord delayed = comm_record("ring", {"a", "a"}, 300);
  const SampleGroups groups = group_cost_samples({&plain, &delayed, &delayed}, "comm");
  ASSERT_EQ(groups.groups.size(), 1U);
  ASSERT_EQ(groups.groups[0].samples.size(), 2U);  // the plain record's two sizes only
  for (const CostSample& sample : groups.groups[0].samples) EXPECT_LT(sample.time_s, 100e-6);
  ASSERT_EQ(groups.left_out.size(), 1U);
  EXPECT_EQ(groups.left_out[0],
            "2 record(s) with inject_comm_delay_us left out: an injected delay is no cost of the backend (it would be "
            "fitted as alpha)");
  // Only delayed records: nothing to fit, said in one line.
  try {
    group_cost_samples({&delayed}, "comm");
    ADD_FAILURE() << "fitted delayed records";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), "comm: no ok comm record on device cpu without an injected delay to fit");
  }
}

// The model's form has each rank add on one thread: records of shm or hier with several
// (shm_reduce_threads) are left out, and said to be.
TEST(SampleGroups, RecordsWithSeveralReduceThreadsAreLeftOutAndSaidToBe) {
  const PointRecord plain = comm_record("shm", {"a", "a"});
  PointRecord threaded = comm_record("shm", {"a", "a"});
  threaded.settings.options["shm_reduce_threads"] = 4;
  PointRecord one_thread = comm_record("shm", {"a", "a"});
  one_thread.settings.options["shm_reduce_threads"] = 1;
  const SampleGroups groups = group_cost_samples({&plain, &threaded, &one_thread}, "comm");
  ASSERT_EQ(groups.groups.size(), 1U);
  EXPECT_EQ(groups.groups[0].samples.size(), 4U);  // the two one-thread records' two sizes each
  ASSERT_EQ(groups.left_out.size(), 1U);
  EXPECT_EQ(groups.left_out[0],
            "1 record(s) with shm_reduce_threads above 1 left out: the model fits each rank's arithmetic on one thread");
  try {
    group_cost_samples({&threaded}, "comm");
    ADD_FAILURE() << "fitted a threaded record";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), "comm: no ok comm record on device cpu with shm_reduce_threads 1 to fit");
  }
}

// Below its crossover the ring hands buffers to MPI_Allreduce: those sizes time MPI, and are left
// out of the ring's fit, and said to be; a record from before the crossover (schema 8) ran the
// ring at every size and keeps them.
TEST(SampleGroups, SizesTheRingHandedToMpiAreLeftOutAndSaidToBe) {
  PointRecord crossover = comm_record("ring", {"a", "a"});
  MessageSizeMetrics megabyte = crossover.measurements->comm->sizes.back();
  megabyte.bytes = 1 << 20;
  crossover.measurements->comm->sizes.push_back(megabyte);               // 4 KiB, 64 KiB, 1 MiB
  crossover.settings.options["ring_allreduce_below_chunk_bytes"] = 8192;  // MPI below 16 KiB at 2 ranks
  SampleGroups groups = group_cost_samples({&crossover}, "comm");
  ASSERT_EQ(groups.groups.size(), 1U);
  ASSERT_EQ(groups.groups[0].samples.size(), 2U);
  EXPECT_EQ(groups.groups[0].samples[0].bytes, 65536);
  ASSERT_EQ(groups.left_out.size(), 1U);
  EXPECT_EQ(groups.left_out[0],
            "1 sample(s) of ring below its crossover setting left out: the backend handed those sizes to "
            "MPI_Allreduce (set its crossover to 0 to fit them)");

  PointRecord before_the_crossover = crossover;
  before_the_crossover.schema_version = kRingCrossoverSince - 1;
  EXPECT_EQ(group_cost_samples({&before_the_crossover}, "comm").groups[0].samples.size(), 3U);

  // One size above it, or none: no fit of the ring's own, said; and with nothing else, no model.
  const PointRecord allreduce = comm_record("allreduce", {"a", "a"});
  for (const int chunk_bytes : {65536, 1 << 20}) {
    crossover.settings.options["ring_allreduce_below_chunk_bytes"] = chunk_bytes;
    groups = group_cost_samples({&crossover, &allreduce}, "comm");
    ASSERT_EQ(groups.groups.size(), 1U);
    EXPECT_EQ(groups.groups[0].backend, "allreduce");
    ASSERT_EQ(groups.left_out.size(), 2U);
    EXPECT_EQ(groups.left_out[1], fmt::format("ring not fitted: {} of the run's sizes lie above its crossover, and a "
                                              "fit needs two (run the comm benchmark to larger sizes, or with the "
                                              "crossover at 0)",
                                              chunk_bytes == 65536 ? 1 : 0));
    EXPECT_THROW(group_cost_samples({&crossover}, "comm"), ConfigError);
  }
}

TEST(SampleGroups, HierAcrossNodesIsRefused) {
  const PointRecord hier = comm_record("hier", {"a", "b"});
  EXPECT_THROW(group_cost_samples({&hier}, "comm"), ConfigError);
  const PointRecord one_node = comm_record("hier", {"a", "a"});
  EXPECT_EQ(group_cost_samples({&one_node}, "comm").groups.size(), 1U);
}

TEST(SampleGroups, APredictionUsesABackendsFitAcrossNodesAndSaysSo) {
  CostModel model;
  BackendCostFit one_node;
  one_node.backend = "ring";
  one_node.parameters.beta_s_per_byte = 0.1e-9;
  BackendCostFit across = one_node;
  across.across_nodes = true;
  across.parameters.beta_s_per_byte = 1e-9;
  BackendCostFit other;
  other.backend = "allreduce";
  model.fits = {one_node, across, other};
  std::vector<std::string> notes;
  const auto fits = prediction_fits(model, {""}, notes);
  ASSERT_EQ(fits.size(), 2U);
  EXPECT_TRUE(fits.at("ring").across_nodes);
  EXPECT_DOUBLE_EQ(fits.at("ring").parameters.beta_s_per_byte, 1e-9);
  EXPECT_FALSE(fits.at("allreduce").across_nodes);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_EQ(notes[0], "backend ring is predicted with its fit across nodes; its one-node fit is in model.json");
}

// Three repeats of two sizes: the table counts two sizes, and shows each size's median residual,
// not whichever repeat came last.
TEST(CostModelConsole, ResidualsAreMediansOverRepeatsAndSizesAreCountedOnce) {
  CostModel model;
  model.comm_dir = "comm";
  BackendCostFit fit;
  fit.backend = "ring";
  for (const auto& [bytes, relative] : std::vector<std::pair<int64_t, double>>{
           {1024, 0.1}, {1024, 0.2}, {1024, -0.9}, {4096, 0.0}, {4096, 0.05}, {4096, 0.0}}) {
    fit.residuals.push_back({{2, bytes, 1e-5, 0}, 1e-5 * (1 + relative), relative});
  }
  model.fits.push_back(fit);
  const std::string console = cost_model_console(model);
  EXPECT_NE(console.find("Residuals by message size (median over repeats):"), std::string::npos) << console;
  EXPECT_NE(console.find("      1024         +10.0%"), std::string::npos) << console;
  EXPECT_NE(console.find("      4096          +0.0%"), std::string::npos) << console;
  const std::string fit_row = console.substr(console.find("\nring"), console.find('\n', console.find("\nring") + 1) - console.find("\nring"));
  EXPECT_NE(fit_row.find("     2 "), std::string::npos) << fit_row;  // sizes
}

}  // namespace
}  // namespace harness
