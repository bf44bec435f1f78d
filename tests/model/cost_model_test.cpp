// The cost model's fit on measurements made from known parameters (each form, with the probe that
// fixes γ), its refusals, and what it predicts for a training run's records.
#include "harness/model/cost_model.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/model/model_report.h"
#include "harness/model/training_prediction.h"
#include "../results/point_record_of.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

const CostParameters kKnown{5e-6, 0.2e-9, 0.1e-9};  // 5 µs, 5 GB/s moved, 10 GB/s reduced

// What a comm benchmark would have measured at these ranks, 4 B to 64 MiB × 4, if the backend
// followed `form` exactly; the probe takes 40 ns plus γ per byte.
std::vector<CostSample> synthetic(CostForm form, const std::vector<int>& ranks) {
  std::vector<CostSample> samples;
  for (const int p : ranks) {
    for (int64_t bytes = 4; bytes <= (int64_t{64} << 20); bytes *= 4) {
      const double n = static_cast<double>(bytes);
      samples.push_back({p, bytes, predicted_allreduce_s(form, kKnown, p, n), 40e-9 + kKnown.gamma_s_per_byte * n});
    }
  }
  return samples;
}

void expect_recovered(const BackendCostFit& fit) {
  EXPECT_NEAR(fit.parameters.alpha_s / kKnown.alpha_s, 1.0, 0.01) << fit.backend;
  EXPECT_NEAR(fit.parameters.beta_s_per_byte / kKnown.beta_s_per_byte, 1.0, 0.01) << fit.backend;
  EXPECT_NEAR(fit.parameters.gamma_s_per_byte / kKnown.gamma_s_per_byte, 1.0, 0.01) << fit.backend;
  EXPECT_LT(fit.rms_relative, 0.01) << fit.backend;
}

TEST(CostModel, TheFitRecoversKnownParametersOfEveryForm) {
  expect_recovered(fit_cost_model("ring", synthetic(CostForm::kRing, {2, 4})));
  expect_recovered(fit_cost_model("gloo", synthetic(CostForm::kRing, {3})));
  expect_recovered(fit_cost_model("ps", synthetic(CostForm::kParameterServer, {2, 4})));
  expect_recovered(fit_cost_model("shm", synthetic(CostForm::kSharedMemory, {2})));
  // The smaller of the ring and recursive doubling: small sizes take doubling at 8 ranks.
  const auto both = synthetic(CostForm::kRingOrRecursiveDoubling, {2, 4, 8});
  expect_recovered(fit_cost_model("allreduce", both));
}

TEST(CostModel, ResidualsSayWhereTheFormMissesTheMeasurements) {
  std::vector<CostSample> samples = synthetic(CostForm::kRing, {2});
  samples[3].time_s *= 1.5;  // one size measured slow
  const BackendCostFit fit = fit_cost_model("ring", samples);
  ASSERT_EQ(fit.residuals.size(), samples.size());
  EXPECT_LT(fit.residuals[3].relative, -0.2);  // fitted well below the slow measurement
  EXPECT_DOUBLE_EQ(fit.max_relative, fit.residuals[3].relative);
  EXPECT_GT(fit.rms_relative, 0.05);
}

TEST(CostModel, OneRankCostsNothing) {
  EXPECT_EQ(predicted_allreduce_s(CostForm::kRing, kKnown, 1, 1e6), 0.0);
  // 2 ranks, ring: 2α + nβ + n/2·γ.
  EXPECT_DOUBLE_EQ(predicted_allreduce_s(CostForm::kRing, kKnown, 2, 1e6), 10e-6 + 200e-6 + 50e-6);
}

TEST(CostModel, NothingToFitIsAnErrorThatSaysWhy) {
  std::vector<CostSample> no_probe = synthetic(CostForm::kRing, {2});
  for (auto& s : no_probe) s.reduce_probe_s = 0;
  try {
    fit_cost_model("ring", no_probe);
    FAIL() << "expected an error";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("no reduction probe"), std::string::npos) << error.what();
  }
  // Records that cannot be fitted are bad input (`harness model` exits 2), not a failure.
  EXPECT_THROW(fit_cost_model("ring", synthetic(CostForm::kRing, {1})), ConfigError);
  EXPECT_THROW(fit_cost_model("ring", {{2, 1024, 1e-5, 1e-7}}), ConfigError);
  EXPECT_THROW(cost_form_of("nccl"), ConfigError);
  EXPECT_EQ(cost_form_of("hier"), CostForm::kSharedMemory);  // on one node it is shm
}

// A training run of ranks 1 and 2 (iris, batch 4 per rank, 1000 parameters, 2 buckets): compute
// 8 ms per step at both, comm 3 ms per step at 2 ranks.
ResultSet training_run(const std::string& name, const std::string& scaling = "weak",
                       const std::string& sweep = R"({"ranks": [1, 2]})") {
  const auto path = fs::temp_directory_path() / ("harness_cost_model_test_" + name);
  fs::remove_all(path);
  const ResultsDirectory directory(path.string());
  directory.create();
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"workload": "iris_mlp", "backend": "ring", "batch_size": 4, "scaling": ")" +
          scaling + R"("}, "sweep": )" + sweep + "}",
      "exp.json");
  const std::vector<Point> points = expand(experiment);
  for (const Point& point : points) {
    PointRecord record = ok_record_of(point);
    Measurements measurements;
    TrainMeasurements train;
    train.train_samples = 120;
    train.samples_trained = 1200;
    train.train_time_s = 1;
    const double comm = point.settings.ranks == 1 ? 0 : 0.003;
    train.steps.step_s = {0.008 + comm};
    train.steps.compute_s = {0.008};
    train.steps.comm_s = {comm};
    train.steps.exposed_comm_s = {comm};
    train.epochs = {{1, 0.3, 0.3, 0.5, 1, 0.0, 120}};
    const int64_t per_rank = scaling == "weak" ? 4 : 4 / point.settings.ranks;
    train.sgd = SgdFacts{1000, per_rank, per_rank * point.settings.ranks, 0.01, 2};
    measurements.train = train;
    measurements.world_size = point.settings.ranks;
    measurements.hosts = std::vector<std::string>(static_cast<std::size_t>(point.settings.ranks), "vm");
    record.measurements = measurements;
    write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
  }
  return ResultSet::load(directory, experiment, points, true);
}

// The ring's fit with the known parameters, as a comm run would give it (without residuals).
BackendCostFit ring_fit() {
  BackendCostFit fit;
  fit.backend = "ring";
  fit.form = CostForm::kRing;
  fit.parameters = kKnown;
  return fit;
}

TEST(TrainingPrediction, PredictsEachRankCountFromComputePerSampleAndTheFit) {
  const ResultSet run = training_run("predict");
  BackendCostFit fit = ring_fit();
  const TrainingPrediction prediction = predict_training(run, {{"ring", fit}}, {1, 4}, 1, 2);
  ASSERT_EQ(prediction.families.size(), 1U);
  const FamilyPrediction& family = prediction.families[0];
  EXPECT_EQ(family.base_ranks, 1);
  EXPECT_DOUBLE_EQ(family.compute_per_sample_s, 0.002);
  EXPECT_EQ(family.gradient_bytes, 4000);
  EXPECT_EQ(family.buckets, 2);
  ASSERT_EQ(family.steps.size(), 3U);  // 1, 2 (measured) and 4
  const PredictedStep& two = family.steps[1];
  EXPECT_EQ(two.ranks, 2);
  const double comm = 2 * predicted_allreduce_s(CostForm::kRing, kKnown, 2, 2000) + 4000 * kKnown.gamma_s_per_byte;
  EXPECT_DOUBLE_EQ(two.comm_s, comm);
  EXPECT_DOUBLE_EQ(two.step_s, 0.008 + comm);
  EXPECT_DOUBLE_EQ(two.step_overlap_s, 0.008);  // hidden behind 2/3 of 8 ms
  EXPECT_DOUBLE_EQ(two.speedup, 2 * 0.008 / (0.008 + comm));
  ASSERT_TRUE(two.measured_comm_s && two.measured_step_s && two.measured_speedup);
  EXPECT_DOUBLE_EQ(*two.measured_comm_s, 0.003);
  EXPECT_DOUBLE_EQ(*two.measured_speedup, 2 * 0.008 / 0.011);
  EXPECT_FALSE(family.steps[2].measured_step_s);
  EXPECT_DOUBLE_EQ(family.steps[0].speedup, 1.0);
  // The comm run had 2 ranks at most: 4 is beyond it, 1 and 2 are not.
  EXPECT_FALSE(family.steps[0].extrapolated);
  EXPECT_FALSE(two.extrapolated);
  EXPECT_TRUE(family.steps[2].extrapolated);
  EXPECT_NE(prediction_csv(prediction).find(",true\n"), std::string::npos);
  EXPECT_FALSE(prediction.assumptions.empty());

  // Strong scaling of a global batch of 4 stops at 4 ranks: a fifth would get no sample.
  const TrainingPrediction strong = predict_training(training_run("strong", "strong"), {{"ring", fit}}, {1, 4, 8}, 1, 2);
  ASSERT_EQ(strong.families.size(), 1U);
  ASSERT_EQ(strong.families[0].steps.size(), 3U);  // 1, 2 and 4
  EXPECT_EQ(strong.families[0].steps.back().ranks, 4);
  EXPECT_EQ(strong.families[0].steps.back().per_rank_batch, 1);

  // Without a fit for the run's backend, nothing can be predicted.
  EXPECT_THROW(predict_training(run, {}, {1, 4}, 1, 2), ConfigError);

  // A weak-scaling zip (dataset_size grows with the ranks) is one family, from its 1-rank point.
  const TrainingPrediction zipped = predict_training(
      training_run("zipped", "weak", R"({"zip": {"ranks": [1, 2], "dataset_size": [60, 120]}})"), {{"ring", fit}},
      {1, 4}, 1, 2);
  ASSERT_EQ(zipped.families.size(), 1U);
  EXPECT_EQ(zipped.families[0].label.find("dataset_size"), std::string::npos) << zipped.families[0].label;
  EXPECT_EQ(zipped.families[0].base_ranks, 1);
  ASSERT_EQ(zipped.families[0].steps.size(), 3U);
}

// Buckets of 2000 bytes lie below the ring's crossover (512 KiB per rank): the ring hands them to
// MPI_Allreduce, so where the comm run has allreduce's fit, that fit times them.
TEST(TrainingPrediction, BucketsBelowTheRingsCrossoverAreTimedWithAllreducesFit) {
  const ResultSet run = training_run("crossover");
  BackendCostFit ring = ring_fit();
  BackendCostFit allreduce;
  allreduce.backend = "allreduce";
  allreduce.form = CostForm::kRingOrRecursiveDoubling;
  allreduce.parameters = {1e-6, 0.1e-9, kKnown.gamma_s_per_byte};
  const TrainingPrediction prediction = predict_training(run, {{"ring", ring}, {"allreduce", allreduce}}, {1, 4}, 1, 2);
  ASSERT_EQ(prediction.families.size(), 1U);
  const PredictedStep& two = prediction.families[0].steps[1];
  ASSERT_EQ(two.ranks, 2);
  EXPECT_DOUBLE_EQ(two.comm_s, 2 * predicted_allreduce_s(CostForm::kRingOrRecursiveDoubling, allreduce.parameters, 2, 2000) +
                                   4000 * kKnown.gamma_s_per_byte);
}

// Buckets of 2000 bytes against a comm run whose largest message was 1024 bytes: every rank count
// that communicates is beyond what it measured, even within its ranks.
TEST(TrainingPrediction, BucketsLargerThanTheCommRunsMessagesAreExtrapolated) {
  const ResultSet run = training_run("large_buckets");
  BackendCostFit fit = ring_fit();
  for (const int64_t bytes : {256, 1024}) fit.residuals.push_back({CostSample{2, bytes, 1e-5, 1e-7}, 1e-5, 0});
  const TrainingPrediction prediction = predict_training(run, {{"ring", fit}}, {1, 2}, 1, 2);
  ASSERT_EQ(prediction.families.size(), 1U);
  ASSERT_EQ(prediction.families[0].steps.size(), 2U);
  EXPECT_FALSE(prediction.families[0].steps[0].extrapolated) << "one rank communicates nothing";
  EXPECT_TRUE(prediction.families[0].steps[1].extrapolated);
  EXPECT_NE(prediction_console(prediction).find("fit beyond:"), std::string::npos);
  fit.residuals.push_back({CostSample{2, 4096, 1e-5, 1e-7}, 1e-5, 0});
  EXPECT_FALSE(predict_training(run, {{"ring", fit}}, {1, 2}, 1, 2).families[0].steps[1].extrapolated);
}

}  // namespace
}  // namespace harness
