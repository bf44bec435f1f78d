#include "harness/results/record.h"
#include "schemes/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/results/gpu_facts.h"
#include "harness/results/metrics.h"
#include "harness/results/provenance.h"
#include "harness/study/point_key.h"

namespace harness {
namespace {

PointRecord ok_record() {
  PointRecord record;
  record.experiment = "exp";
  record.settings.ranks = 2;
  record.repeat = 1;
  record.key = PointKey(record.settings, 1).hash();
  record.id = point_id(0, PointKey(record.settings, 1));
  record.status = PointStatus::kOk;
  record.launch.command = {"mpirun", "-n", "2"};
  record.launch.outcome = "exit code 0";
  record.launch.wall_time_s = 3.5;
  record.provenance = current_provenance({"harness", "run", "x.json"});
  record.timing = PointTiming{0.4, 0.3, 0.2, 2.0, 0.1, 0.5};
  Measurements measurements;
  measurements.world_size = 2;
  measurements.hosts = {"a", "a"};
  measurements.phases = RankPhases{100.0, 0.3, 0.2, 2.0, 0.1, 102.6};
  TrainMeasurements train;
  train.train_time_s = 2.0;
  train.steps.step_s = {0.1, 0.2};
  train.steps.compute_s = {0.05, 0.1};
  train.steps.comm_s = {0.05, 0.1};
  train.steps.exposed_comm_s = {0.05, 0.1};
  train.epochs = {{1, std::nan(""), 0.5, 0.9, 2.0, 0.1, 120}};  // a diverged loss is stored as null
  train.loss_curve = {{40, 1.1}, {80, std::nan("")}, {120, 0.5}};
  train.sgd = SgdFacts{100, 4, 8, 0.01, 1};
  measurements.train = train;
  record.measurements = measurements;
  return record;
}

TEST(Record, RoundTripsThroughJson) {
  const PointRecord record = ok_record();
  const Json json = to_json(record);
  EXPECT_EQ(json["schema_version"], kRecordSchemaVersion);
  EXPECT_TRUE(json["measurements"]["epochs"][0]["train_loss"].is_null());
  const PointRecord read = record_from_json(json, "r.json");
  EXPECT_EQ(to_json(read), json);
  EXPECT_TRUE(std::isnan(read.measurements->train->epochs[0].train_loss));
  EXPECT_DOUBLE_EQ(read.timing->train_s, 2.0);
  EXPECT_EQ(read.measurements->train->sgd->global_batch, 8);
  ASSERT_EQ(read.measurements->train->loss_curve.size(), 3U);
  EXPECT_EQ(read.measurements->train->loss_curve[2].samples_seen, 120);
  EXPECT_TRUE(std::isnan(read.measurements->train->loss_curve[1].train_loss));
}

// Scheme async_ps's counts and a target's time round-trip; the metrics read the staleness's median,
// 95th percentile and most, the busiest server, and the time to target.
TEST(Record, AsyncPsCountsAndTheTimeToTargetRoundTripIntoTheMetrics) {
  PointRecord record = ok_record();
  record.settings.scheme = "async_ps";
  record.settings.target = TrainingTarget{"test_accuracy", 0.85};
  record.key = PointKey(record.settings, 1).hash();
  record.id = point_id(0, PointKey(record.settings, 1));
  TrainMeasurements& train = *record.measurements->train;
  train.async_ps = AsyncPsFacts{2, {50, 40, 8, 2}, {0.2, 0.35}, {60, 40}};
  train.time_to_target = TargetReached{true, 1.5, 1, 2};
  const PointRecord read = record_from_json(to_json(record), "r.json");
  EXPECT_EQ(to_json(read), to_json(record));
  ASSERT_TRUE(read.settings.target.has_value());
  EXPECT_EQ(read.settings.target->metric, "test_accuracy");
  const PointMetrics metrics = point_metrics(*read.measurements->train);
  EXPECT_EQ(metrics.staleness_median, 0.0);  // 50 of 100 at 0
  EXPECT_EQ(metrics.staleness_p95, 2.0);     // 98 of 100 at 2 or less
  EXPECT_EQ(metrics.staleness_max, 3.0);
  EXPECT_EQ(metrics.server_busy_fraction, 0.35);
  EXPECT_EQ(metrics.target_reached, true);
  EXPECT_EQ(metrics.time_to_target_s, 1.5);

  train.time_to_target = TargetReached{};  // not reached: no time
  const PointMetrics missed = point_metrics(*record_from_json(to_json(record), "r.json").measurements->train);
  EXPECT_EQ(missed.target_reached, false);
  EXPECT_FALSE(missed.time_to_target_s.has_value());
}

// A pipeline's stages round-trip, and its metrics split the step: 2 stages computing 2 and 4 ms, of
// which forward and backward passes 1.8 and 3.6 ms (a third forward), m = 2, 1F1B, a 6 ms step.
// Balanced at their mean, 2.7 ms of passes pipelined and 0.3 ms once, a step takes
// 2.7 (2 + 2 - 1)/2 + 0.3 = 4.35 ms; replayed with their own passes (stage 0: F0 0-0.3, F1 -0.6;
// stage 1: F0 0.3-0.9, B0 -2.1, F1 -2.7, B1 -3.9; stage 0: B0 2.1-2.7, B1 3.9-4.5) and the larger
// once (0.4 ms), 4.9 ms.
TEST(Record, PipelineStagesRoundTripAndSplitTheStep) {
  PointRecord record = ok_record();
  record.settings.scheme = "pipeline";
  record.key = PointKey(record.settings, 1).hash();
  record.id = point_id(0, PointKey(record.settings, 1));
  PipelineFacts pipeline;
  pipeline.stages = 2;
  pipeline.replicas = 1;
  pipeline.micro_batches = 2;
  pipeline.schedule = "1f1b";
  pipeline.boundaries = {2};
  pipeline.balanced = true;
  pipeline.layer_names = {"a", "b", "c"};
  pipeline.layer_times_s = {0.001, 0.001, 0.002};
  // first, end, step, compute, forward, backward, receive, send, average, held, activation and step peaks
  pipeline.stage = {{0, 2, 0.006, 0.002, 0.0006, 0.0012, 0.004, 0, 0, 2, 3'000'000, 5'000'000},
                    {2, 3, 0.006, 0.004, 0.0012, 0.0024, 0.002, 0, 0, 1, 1'000'000, 4'000'000}};
  record.measurements->train->pipeline = pipeline;
  const PointRecord read = record_from_json(to_json(record), "r.json");
  EXPECT_EQ(to_json(read), to_json(record));
  const PointMetrics metrics = point_metrics(*read.measurements->train);
  EXPECT_DOUBLE_EQ(*metrics.pipeline_bubble, 0.5);  // 6 of the stages' 12 ms computed
  EXPECT_DOUBLE_EQ(*metrics.pipeline_bubble_predicted, 1.0 / 3);
  EXPECT_NEAR(*metrics.stage_imbalance, 4.0 / 3 - 1, 1e-12);
  EXPECT_DOUBLE_EQ(*metrics.peak_activation_mb, 3.0);
  // Replayed with free transfers, the stages would idle 1 - 3/4.9 of the step.
  EXPECT_NEAR(*metrics.pipeline_bubble_replayed, 1 - 3 / 4.9, 1e-12);
  EXPECT_NEAR(simulated_step_time("1f1b", {0.0003, 0.0006}, {0.0006, 0.0012}, 2), 0.0045, 1e-12);
  EXPECT_NEAR(*metrics.pipeline_compute_share, 0.5, 1e-12);
  EXPECT_NEAR(*metrics.pipeline_bubble_share, (4.35 - 3) / 6, 1e-12);
  EXPECT_NEAR(*metrics.pipeline_imbalance_share, (4.9 - 4.35) / 6, 1e-12);
  EXPECT_NEAR(*metrics.pipeline_transfer_share, (6 - 4.9) / 6, 1e-12);
  // The replicas' averaging is no bubble: 1 ms of each stage's waits was averaging.
  PipelineFacts hybrid = pipeline;
  for (PipelineStageFacts& stage : hybrid.stage) stage.average_s = 0.001;
  record.measurements->train->pipeline = hybrid;
  EXPECT_DOUBLE_EQ(*point_metrics(*record.measurements->train).pipeline_bubble, 1.0 - 6.0 / 10);
}

// The first epoch that reaches the target: accuracy at least it, a loss at most it; the epochs'
// training times summed up to it; NaN reaches nothing.
TEST(TimeToTarget, IsTheFirstEpochThatReachesItWithTheTrainingTimeSoFar) {
  const std::vector<EpochMeasurement> epochs = {{1, 0.9, 0.8, 0.5, 2.0, 0.5, 100},
                                                {2, std::nan(""), std::nan(""), std::nan(""), 3.0, 0.5, 200},
                                                {3, 0.4, 0.45, 0.86, 4.0, 0.5, 300},
                                                {4, 0.3, 0.5, 0.9, 5.0, 0.5, 400}};
  EXPECT_FALSE(time_to_target(epochs, 10, std::nullopt).has_value());
  const auto accuracy = time_to_target(epochs, 10, TrainingTarget{"test_accuracy", 0.85});
  ASSERT_TRUE(accuracy && accuracy->reached);
  EXPECT_DOUBLE_EQ(accuracy->time_s, 9.0);
  EXPECT_EQ(accuracy->epoch, 3);
  EXPECT_EQ(accuracy->step, 30);
  EXPECT_EQ(time_to_target(epochs, 10, TrainingTarget{"test_accuracy", 0.5})->epoch, 1);  // "at least"
  EXPECT_EQ(time_to_target(epochs, 10, TrainingTarget{"train_loss", 0.35})->epoch, 4);
  EXPECT_EQ(time_to_target(epochs, 10, TrainingTarget{"test_loss", 0.8})->epoch, 1);  // "at most"
  const auto never = time_to_target(epochs, 10, TrainingTarget{"test_accuracy", 0.95});
  ASSERT_TRUE(never.has_value());
  EXPECT_FALSE(never->reached);
  EXPECT_EQ(never->time_s, 0.0);
}

TEST(StalenessQuantile, IsTheSmallestStalenessWithThatShareAtOrBelowIt) {
  EXPECT_EQ(staleness_quantile({}, 0.5), 0);
  EXPECT_EQ(staleness_quantile({0, 0, 5}, 0.5), 2);
  EXPECT_EQ(staleness_quantile({3, 1}, 0.75), 0);
  EXPECT_EQ(staleness_quantile({3, 1}, 0.76), 1);
  EXPECT_EQ(staleness_quantile({3, 1, 0, 0}, 1.0), 1);  // trailing zeros are no gradient
}

// Version 3 had no loss curve: such a record is read with an empty one.
TEST(Record, GpuFactsAndTheExchangePathRoundTripAndSayWhetherRanksShareAGpu) {
  PointRecord record = ok_record();
  record.settings.device = "cuda";
  record.key = PointKey(record.settings, 1).hash();
  Measurements& measurements = *record.measurements;
  measurements.exchange_path = "pinned host staging";
  GpuFacts gpus;
  gpus.ranks = {{0, "NVIDIA H100 80GB HBM3", "0000:2A:00.0", int64_t{80} << 30, false},
                {0, "NVIDIA H100 80GB HBM3", "0000:2A:00.0", int64_t{80} << 30, false}};
  gpus.driver_version = "13.0";
  gpus.runtime_version = "13.0";
  measurements.gpus = gpus;
  const Json json = to_json(record);
  EXPECT_EQ(json["measurements"]["exchange_path"], "pinned host staging");
  EXPECT_EQ(json["measurements"]["gpus"]["ranks"][1]["pci_bus_id"], "0000:2A:00.0");
  const PointRecord read = record_from_json(json, "r.json");
  EXPECT_EQ(to_json(read), json);

  // Both ranks on host "a" use one GPU, without MPS: said, with what it costs them.
  EXPECT_TRUE(ranks_share_a_gpu(measurements.hosts, gpus));
  EXPECT_EQ(describe_gpus(measurements.hosts, gpus),
            "2 rank(s) on NVIDIA H100 80GB HBM3 (80 GiB), driver 13.0, runtime 13.0; ranks share a GPU, "
            "without MPS (time-sliced)");
  gpus.ranks[0].mps = gpus.ranks[1].mps = true;
  EXPECT_NE(describe_gpus(measurements.hosts, gpus).find("share a GPU, with MPS"), std::string::npos);
  // The same bus id on two hosts is two GPUs; two bus ids on one host too.
  EXPECT_FALSE(ranks_share_a_gpu({"a", "b"}, gpus));
  gpus.ranks[1].pci_bus_id = "0000:3B:00.0";
  EXPECT_FALSE(ranks_share_a_gpu({"a", "a"}, gpus));

  Json damaged = json;
  damaged["measurements"]["gpus"]["ranks"][0].erase("name");
  EXPECT_THROW(record_from_json(damaged, "r.json"), Error);
}

TEST(Record, AVersion7RecordHasNoExchangePath) {
  Json json = to_json(ok_record());
  json["schema_version"] = 7;
  json["measurements"]["schema_version"] = 7;
  json["measurements"].erase("exchange_path");
  const PointRecord read = record_from_json(json, "r.json");
  EXPECT_EQ(read.measurements->exchange_path, "");
}

TEST(Record, TheSlowestRanksAndTheRankSampleRoundTripAndAreChecked) {
  PointRecord record = ok_record();
  StepSeries& steps = record.measurements->train->steps;
  steps.slowest_rank = std::vector<int>{1, 0};
  steps.slowest_lead_s = std::vector<double>{0.002, 0.0005};
  steps.rank_compute = RankComputeSample{2, {0}, {{0.04, 0.05}}};
  const Json json = to_json(record);
  const PointRecord read = record_from_json(json, "r.json");
  EXPECT_EQ(to_json(read), json);
  EXPECT_EQ(read.measurements->train->steps.slowest_rank, std::vector<int>({1, 0}));
  EXPECT_EQ(read.measurements->train->steps.rank_compute->compute_s[0][1], 0.05);
  // A version 7 record has none of them.
  Json older = to_json(ok_record());
  older["schema_version"] = 7;
  older["measurements"]["schema_version"] = 7;
  const PointRecord old_read = record_from_json(older, "r.json");
  EXPECT_FALSE(old_read.measurements->train->steps.slowest_rank.has_value());
  EXPECT_FALSE(old_read.measurements->train->steps.rank_compute.has_value());

  Json bad = json;
  bad["measurements"]["steps"]["slowest_rank"] = {1, 2};
  EXPECT_THROW(record_from_json(bad, "r.json"), Error);
  try {
    record_from_json(bad, "points/p.json");
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "points/p.json: measurements: steps.slowest_rank: expected ranks from 0 to 1, got 2 at step 1");
  }
  bad = json;
  bad["measurements"]["steps"].erase("slowest_lead_s");
  EXPECT_THROW(record_from_json(bad, "r.json"), Error);
  bad = json;
  bad["measurements"]["steps"]["rank_compute"]["stride"] = 3;
  EXPECT_THROW(record_from_json(bad, "r.json"), Error);
  bad = json;
  bad["measurements"]["steps"]["rank_compute"]["steps"] = {1};  // not a multiple of the stride
  EXPECT_THROW(record_from_json(bad, "r.json"), Error);
}

TEST(Record, AVersion3RecordIsReadWithoutALossCurve) {
  Json json = to_json(ok_record());
  json["schema_version"] = 3;
  json["measurements"]["schema_version"] = 3;
  json["measurements"].erase("loss_curve");
  const PointRecord read = record_from_json(json, "r.json");
  EXPECT_EQ(read.schema_version, 3);
  EXPECT_TRUE(read.measurements->train->loss_curve.empty());
}

// A record written before a setting existed (its settings lack the key, its stored key hashed
// them without it) is still the record of the points that now have that setting's default.
TEST(Record, TheKeyIsTheSettingsAsThisHarnessReadsThem) {
  Json json = to_json(ok_record());
  json["settings"].erase("inject_comm_delay_us");
  json["key"] = "0badc0de";
  const PointRecord read = record_from_json(json, "r.json");
  EXPECT_EQ(read.key, PointKey(ok_record().settings, 1).hash());
}

// Since version 14 the staging levers default to "auto" and records say what staging ran with.
// A record from before keeps its point on the host, where "auto" is what the old defaults were,
// and its values on a GPU, where it ran with them.
TEST(Record, RecordsBeforeTheLeversAutoKeepTheirPointsOnTheHostAndTheirValuesOnAGpu) {
  const PointRecord fresh = ok_record();
  const auto version_13 = [](Json json) {
    json["schema_version"] = 13;
    json["measurements"]["schema_version"] = 13;
    json["settings"]["shm_reduce_threads"] = 1;
    json["settings"]["shm_copy_engine_gathers"] = false;
    return json;
  };
  const PointRecord host = record_from_json(version_13(to_json(fresh)), "r.json");
  EXPECT_EQ(host.settings.options["shm_reduce_threads"], Json("auto"));
  EXPECT_EQ(host.settings.options["shm_copy_engine_gathers"], Json("auto"));
  EXPECT_EQ(host.key, fresh.key) << "the point of its experiment under the new defaults";
  Json set = version_13(to_json(fresh));
  set["settings"]["shm_reduce_threads"] = 4;  // set by hand: kept
  EXPECT_EQ(record_from_json(set, "r.json").settings.options["shm_reduce_threads"], Json(4));

  Json gpu = version_13(to_json(fresh));
  gpu["settings"]["device"] = "cuda";
  gpu["settings"].erase("shm_copy_engine_gathers");  // before version 12
  const PointRecord staged = record_from_json(gpu, "r.json");
  EXPECT_EQ(staged.settings.options["shm_reduce_threads"], Json(1));
  EXPECT_EQ(staged.settings.options["shm_copy_engine_gathers"], Json(false));
  EXPECT_TRUE(staged.measurements->staging_levers.empty());

  // Written now: what staging ran with, by size, round trip; a bad step is refused in one line.
  PointRecord now = fresh;
  now.measurements->staging_levers = {{0, {1, false}}, {16 << 20, {4, true}}};
  const Json json = to_json(now);
  EXPECT_EQ(json["measurements"]["staging_levers"][1],
            (Json{{"from_bytes", 16 << 20}, {"reduce_threads", 4}, {"copy_engine_gathers", true}}));
  EXPECT_EQ(record_from_json(json, "r.json").measurements->staging_levers, now.measurements->staging_levers);
  EXPECT_FALSE(to_json(fresh)["measurements"].contains("staging_levers")) << "nothing staged";
  Json bad = json;
  bad["measurements"]["staging_levers"][1]["reduce_threads"] = 0;
  try {
    record_from_json(bad, "r.json");
    ADD_FAILURE() << "0 threads accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("staging_levers[1]: reduce_threads: expected a positive integer"),
              std::string::npos)
        << error.what();
  }
}

std::string refusal(const Json& json) {
  try {
    record_from_json(json, "points/p.json");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Record, NewerSchemaIsRefusedInOneLine) {
  Json json = to_json(ok_record());
  json["schema_version"] = kRecordSchemaVersion + 1;
  EXPECT_EQ(refusal(json), fmt::format("points/p.json: record schema version {} is newer than this "
                                       "harness reads (up to {}); read it with a newer harness",
                                       kRecordSchemaVersion + 1, kRecordSchemaVersion));
}

TEST(Record, IncompleteRecordsAreRefused) {
  Json json = to_json(ok_record());
  json.erase("measurements");
  EXPECT_EQ(refusal(json), "points/p.json: status \"ok\" without measurements");
  json = to_json(ok_record());
  json["launch"].erase("wall_time_s");
  EXPECT_NE(refusal(json).find("wall_time_s is missing"), std::string::npos) << refusal(json);
  json = to_json(ok_record());
  json["measurements"]["steps"]["step_s"] = "fast";
  EXPECT_NE(refusal(json).find("step_s: expected a list"), std::string::npos) << refusal(json);
  json = to_json(ok_record());
  json["measurements"]["loss_curve"][2]["samples_seen"] = 80;
  EXPECT_NE(refusal(json).find("loss_curve[2]: samples_seen: expected more than the value before"),
            std::string::npos)
      << refusal(json);
}

TEST(Record, FailedRecordsKeepTheReasonAndNoMeasurements) {
  PointRecord record = ok_record();
  record.status = PointStatus::kFailed;
  record.reason = "rank 1 killed by signal 9 (Killed)";
  record.log_tail = {"boom"};
  record.measurements.reset();
  const PointRecord read = record_from_json(to_json(record), "r.json");
  EXPECT_FALSE(read.ok());
  EXPECT_EQ(read.reason, record.reason);
  EXPECT_EQ(read.log_tail, record.log_tail);
  EXPECT_FALSE(read.measurements.has_value());
}

TEST(Record, EveryStatusRoundTripsAndATimeoutKeepsItsPartialMeasurements) {
  for (const PointStatus status :
       {PointStatus::kFailed, PointStatus::kTimeout, PointStatus::kCancelled, PointStatus::kOutOfMemory,
        PointStatus::kNodeFailure, PointStatus::kPreempted, PointStatus::kLost}) {
    PointRecord record = ok_record();
    record.status = status;
    record.reason = "stopped";
    record.partial_measurements = std::move(record.measurements);
    record.partial_measurements->complete = false;
    record.measurements.reset();
    const Json json = to_json(record);
    EXPECT_EQ(json["status"], std::string(status_name(status)));
    EXPECT_TRUE(json["measurements"].is_null());
    const PointRecord read = record_from_json(json, "r.json");
    EXPECT_EQ(read.status, status);
    ASSERT_TRUE(read.partial_measurements.has_value());
    EXPECT_FALSE(read.partial_measurements->complete);
    EXPECT_EQ(read.partial_measurements->train->steps.step_s.size(), 2U);
  }
  EXPECT_TRUE(is_retryable(PointStatus::kNodeFailure));
  EXPECT_TRUE(is_retryable(PointStatus::kPreempted));
  EXPECT_FALSE(is_retryable(PointStatus::kTimeout));
  EXPECT_FALSE(is_retryable(PointStatus::kFailed));
  EXPECT_FALSE(status_from_name("unknown").has_value());
}

TEST(Record, OkNeedsCompleteMeasurementsAndOlderVersionsOnlyKnowOkAndFailed) {
  Json json = to_json(ok_record());
  json["measurements"]["complete"] = false;
  EXPECT_EQ(refusal(json), "points/p.json: status \"ok\" with incomplete measurements");
  json = to_json(ok_record());
  json["status"] = "timeout";
  json["schema_version"] = 2;
  EXPECT_NE(refusal(json).find("status: expected \"ok\" or \"failed\""), std::string::npos) << refusal(json);
}

TEST(Record, TimingAddsUpToTheWallTime) {
  const RankPhases phases{100.5, 0.3, 0.2, 2.0, 0.1, 103.1};
  const PointTiming timing = point_timing(100.0, 3.6, phases);
  EXPECT_DOUBLE_EQ(timing.launch_s, 0.5);
  EXPECT_NEAR(timing.finish_s, 0.5, 1e-9);
  EXPECT_NEAR(timing.launch_s + timing.init_s + timing.data_s + timing.train_s + timing.eval_s +
                  timing.finish_s,
              3.6, 1e-9);
}

TEST(Record, ProvenanceNamesVersionCommitHostAndCommandLine) {
  const Provenance provenance = current_provenance({"harness", "run", "x.json"});
  EXPECT_NE(provenance.git_commit, "");
  EXPECT_EQ(provenance.harness_version, HARNESS_VERSION);
  EXPECT_FALSE(provenance.host.empty());
  EXPECT_EQ(provenance.command_line[2], "x.json");
  EXPECT_EQ(utc_timestamp(0), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

// A record written by harness 0.1.0 (commit 76e39da) is converted: its key is computed from its
// settings (version 1 hashed the harness version too) and it was run by the local launcher.
TEST(Record, VersionOneRecordsAreConverted) {
  const std::string path =
      std::string(HARNESS_SOURCE_DIR) + "/tests/fixtures/results_v1_train/points/p000-1ff54276.json";
  const Json json = read_json_file(path);
  ASSERT_EQ(json["schema_version"], 1);
  const PointRecord record = record_from_json(json, path);
  EXPECT_EQ(record.schema_version, 1);
  EXPECT_EQ(record.key, PointKey(record.settings, record.repeat).hash());
  EXPECT_EQ(record.launch.scheduler, "local");
  EXPECT_EQ(record.provenance.harness_version, "0.1.0");
  ASSERT_TRUE(record.measurements && record.measurements->train);
  EXPECT_FALSE(record.measurements->phases.has_value());
  EXPECT_FALSE(record.timing.has_value());
  EXPECT_GT(record.measurements->train->samples_trained, 0);
}

// results/README.md describes the records this harness writes: it names their schema version.
TEST(PointRecord, TheResultsReadmeNamesTheSchemaVersionWritten) {
  std::ifstream in(std::string(HARNESS_SOURCE_DIR) + "/results/README.md");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("record schema version " + std::to_string(kRecordSchemaVersion) + ","), std::string::npos)
      << "results/README.md should name record schema version " << kRecordSchemaVersion;
}

}  // namespace
}  // namespace harness
