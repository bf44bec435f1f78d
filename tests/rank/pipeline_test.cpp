// Scheme pipeline (harness/rank/pipeline.h) on every rank of the world under mpirun: p stages x d
// replicas with m micro-batches end with the parameters of one rank that trains the whole global
// batch (sync, the same steps), for the Iris MLP and the CNN, both schedules, m = 1 and 4: p x 1
// on 1 to 4 ranks (p = 1 is gradient accumulation), and the hybrid 2 x 2 on 4. The record says
// 1F1B never held more than p micro-batches and GPipe all m. ResNet, whose BatchNorm normalises
// each micro-batch by its own statistics, trains to a loss within 5% of one rank's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/device_staging.h"
#include "backends/gloo_allreduce.h"
#include "backends/registry.h"
#include "harness/rank/pipeline.h"
#include "harness/rank/trainer.h"
#include "workloads/factories.h"
#include "workloads/mnist_cnn.h"
#include "workloads/registry.h"
#include "tests/mpi_world.h"
#include "tests/rank/parameter_vectors.h"

namespace harness::pipeline_test {  // named: the unity build joins this file with others that have such helpers
namespace {

int world_size() { return World().size; }
int world_rank() { return World().rank; }

struct Pipelined {
  std::vector<float> parameters;  // rank 0's whole model after training
  LoopResult result;
  TrainMeasurements measurements;  // rank 0's
};

Pipelined train_pipeline(PointSettings settings, int cuda_device = kNoCudaDevice) {
  settings.ranks = world_size();
  settings.scheme = "pipeline";
  auto workload = make_workload(settings, cuda_device);
  const BackendMaker make_backend = [&settings](const Communicator& group) {
    return make_gradient_sync(settings.backend, group);
  };
  PipelineScheme scheme(*workload, MPI_COMM_WORLD, settings, make_backend);
  scheme.broadcast_parameters();
  Pipelined trained;
  trained.result = scheme.train(nullptr);
  scheme.add_measurements(trained.result, trained.measurements);
  trained.parameters = test::flattened_parameters(*workload);
  return trained;
}

// sync on this rank alone with the replicas' batches as one.
struct OneRank {
  std::vector<float> parameters;
  LoopResult result;
};

OneRank train_one_rank(PointSettings settings, int replicas, int cuda_device = kNoCudaDevice) {
  settings.ranks = 1;
  settings.scheme = "sync";
  settings.options.erase("pipeline_stages");
  settings.options.erase("micro_batches");
  settings.options.erase("pipeline_schedule");
  settings.options.erase("stage_boundaries");
  settings.batch_size *= replicas;
  auto workload = make_workload(settings, cuda_device);
  auto backend = make_gradient_sync("allreduce", MPI_COMM_SELF);
  DataParallelTrainer trainer(*workload, *backend, MPI_COMM_SELF, settings);
  OneRank trained;
  trained.result = trainer.train();
  trained.parameters = test::flattened_parameters(*workload);
  return trained;
}

PointSettings small(const std::string& workload, int replicas) {
  PointSettings settings;
  settings.workload = workload;
  settings.backend = "allreduce";
  if (workload == "iris_mlp") {
    settings.batch_size = 8;
    settings.lr = 0.5;
    settings.dataset_size = 96;
    settings.epochs = 2;
    settings.warmup_steps = 1;
  } else {
    settings.batch_size = 8;
    settings.lr = 0.05;
    settings.dataset_size = 8 * replicas * 6;  // 6 steps an epoch
    settings.test_size = 10;
    settings.epochs = 1;
  }
  return settings;
}

// The stage layouts every world size tests: p x 1, and on 4 ranks also the hybrid 2 x 2.
std::vector<int> stage_counts(const std::string& workload) {
  const int size = world_size();
  std::vector<int> counts;
  const int layers = workload == "iris_mlp" ? 3 : 4;
  if (size <= layers) counts.push_back(size);
  if (size == 4) counts.push_back(2);
  return counts;
}

TEST(PipelineEquality, StagesAndMicroBatchesEqualOneRankWithTheWholeBatch) {
  const int size = world_size();
  for (const std::string workload : {"iris_mlp", "mnist_cnn"}) {
    if (workload == "mnist_cnn" && !std::filesystem::exists(kDefaultMnistDirectory)) continue;
    for (const int stages : stage_counts(workload)) {
      const int replicas = size / stages;
      const PointSettings base = small(workload, replicas);
      const OneRank reference = train_one_rank(base, replicas);
      for (const std::string schedule : {"gpipe", "1f1b"}) {
        for (const int micro : {1, 4}) {
          PointSettings settings = base;
          settings.scheme = "pipeline";
          apply_setting(settings, "pipeline_stages", stages, "test");
          apply_setting(settings, "micro_batches", micro, "test");
          apply_setting(settings, "pipeline_schedule", schedule, "test");
          const Pipelined pipelined = train_pipeline(settings);
          const std::string what = fmt::format("{}: {} stages x {} replicas, {}, m = {}", workload, stages, replicas,
                                               schedule, micro);
          // Every rank took as many timed steps as the reference.
          EXPECT_EQ(pipelined.result.steps.step_s.size(), reference.result.steps.step_s.size()) << what;
          if (world_rank() != 0) continue;
          ASSERT_EQ(pipelined.parameters.size(), reference.parameters.size());
          EXPECT_LE(test::relative_difference(pipelined.parameters, reference.parameters), 1e-5) << what;
          ASSERT_EQ(pipelined.result.epochs.size(), reference.result.epochs.size()) << what;
          EXPECT_NEAR(pipelined.result.epochs.back().train_loss, reference.result.epochs.back().train_loss,
                      1e-5 * std::abs(reference.result.epochs.back().train_loss))
              << what;
          EXPECT_NEAR(pipelined.result.epochs.back().test_accuracy, reference.result.epochs.back().test_accuracy,
                      1e-9)
              << what;
          // What every stage held at once: GPipe all m micro-batches, 1F1B at most p - s of them.
          ASSERT_TRUE(pipelined.measurements.pipeline.has_value()) << what;
          const PipelineFacts& facts = *pipelined.measurements.pipeline;
          ASSERT_EQ(facts.stage.size(), static_cast<std::size_t>(stages)) << what;
          for (int s = 0; s < stages; ++s) {
            const int held = facts.stage[static_cast<std::size_t>(s)].most_held;
            if (schedule == "gpipe") {
              EXPECT_EQ(held, micro) << what << ", stage " << s;
            } else {
              EXPECT_EQ(held, std::min(stages - s, micro)) << what << ", stage " << s;
              EXPECT_LE(held, stages) << what << ", stage " << s;
            }
            EXPECT_GT(facts.stage[static_cast<std::size_t>(s)].peak_activation_bytes, 0) << what;
          }
          EXPECT_EQ(facts.stage.front().first_layer, 0);
          EXPECT_EQ(facts.stage.back().end_layer, workload == "iris_mlp" ? 3 : 4);
        }
      }
    }
  }
}

// The hybrid 2 x 2: each stage's two replicas average their gradients with every host backend
// (ps with its root training too), and the model is still one rank's with the whole batch.
TEST(PipelineHybrid, EveryBackendAveragesAStagesReplicas) {
  if (world_size() != 4) GTEST_SKIP() << "2 stages x 2 replicas";
  const PointSettings base = small("iris_mlp", 2);
  const OneRank reference = train_one_rank(base, 2);
  for (const std::string& backend : host_memory_backend_names()) {
    if (backend == "gloo" && !gloo_available()) continue;
    PointSettings settings = base;
    settings.backend = backend;
    settings.scheme = "pipeline";
    apply_setting(settings, "ps_server_trains", true, "test");
    apply_setting(settings, "pipeline_stages", 2, "test");
    apply_setting(settings, "micro_batches", 2, "test");
    const Pipelined pipelined = train_pipeline(settings);
    if (world_rank() != 0) continue;
    EXPECT_LE(test::relative_difference(pipelined.parameters, reference.parameters), 1e-5) << backend;
  }
}

// Explicit cuts are taken as given; "balanced" ones are measured on rank 0 and the same on every rank.
TEST(PipelineBoundaries, GivenCutsAreUsedAndMeasuredOnesAgreeOnEveryRank) {
  const int size = world_size();
  if (size != 2) GTEST_SKIP() << "two stages";
  if (!std::filesystem::exists(kDefaultMnistDirectory)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  PointSettings settings = small("mnist_cnn", 1);
  settings.scheme = "pipeline";
  settings.ranks = size;
  apply_setting(settings, "pipeline_stages", 2, "test");
  for (const Json& cuts : {Json(Json::array({3})), Json("balanced")}) {
    apply_setting(settings, "stage_boundaries", cuts, "test");
    auto workload = make_workload(settings, kNoCudaDevice);
    PipelineScheme scheme(*workload, MPI_COMM_WORLD, settings,
                          [](const Communicator& group) { return make_gradient_sync("allreduce", group); });
    ASSERT_EQ(scheme.boundaries().size(), 1U);
    if (cuts.is_array()) {
      EXPECT_EQ(scheme.boundaries()[0], 3);
    } else {
      int zeros = scheme.boundaries()[0];
      MPI_Bcast(&zeros, 1, MPI_INT, 0, MPI_COMM_WORLD);
      EXPECT_EQ(scheme.boundaries()[0], zeros);
      EXPECT_GE(zeros, 1);
      EXPECT_LE(zeros, 3);
    }
  }
}

// BatchNorm normalises each micro-batch by its own mean and variance: a pipeline's gradients are
// not the whole batch's, so ResNet is compared by its mean training loss over one epoch of 4
// steps, within 5%: 2 stages x 2 micro-batches of 16 ended 1.6% below one rank's batch of 32 here
// (at micro-batches of 4 against 8, 11% apart: the fewer samples, the further the statistics move).
TEST(PipelineEquality, ResNetsLossIsOneRanksWithinFivePercent) {
  const int size = world_size();
  if (size != 2) GTEST_SKIP() << "two stages";
  PointSettings settings;
  settings.workload = "resnet";
  settings.batch_size = 32;
  settings.dataset_size = 128;
  settings.test_size = 4;
  settings.epochs = 1;
  settings.lr = 0.01;
  apply_setting(settings, "image_size", 32, "test");
  const OneRank reference = train_one_rank(settings, 1);
  settings.scheme = "pipeline";
  apply_setting(settings, "pipeline_stages", 2, "test");
  apply_setting(settings, "micro_batches", 2, "test");
  const Pipelined pipelined = train_pipeline(settings);
  if (world_rank() != 0) return;
  const double expected = reference.result.epochs.back().train_loss;
  EXPECT_NEAR(pipelined.result.epochs.back().train_loss, expected, 0.05 * expected);
}

// On GPUs (tests gpu_training_*, label gpu; skipped without a GPU and a LibTorch with CUDA): 2 or 3
// stages sharing the node's GPU(s), their activations and gradients staged through pinned host
// memory, end with the parameters of one rank on a GPU with the whole batch, both schedules; each
// stage's memory is the CUDA caching allocator's.
TEST(GpuTraining, PipelineStagesOnGpusEqualOneRank) {
  if (const CudaStatus cuda = cuda_status(); !cuda.usable) GTEST_SKIP() << cuda.reason;
  if (const std::string problem = training_device_problem("cuda"); !problem.empty()) GTEST_SKIP() << problem;
  const int size = world_size();
  if (size < 2 || size > 3) GTEST_SKIP() << "2 or 3 stages of the Iris MLP";
  const int device = select_cuda_device(MPI_COMM_WORLD);
  PointSettings base = small("iris_mlp", 1);
  base.device = "cuda";
  const OneRank reference = train_one_rank(base, 1, device);
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    PointSettings settings = base;
    settings.scheme = "pipeline";
    apply_setting(settings, "pipeline_stages", size, "test");
    apply_setting(settings, "micro_batches", 4, "test");
    apply_setting(settings, "pipeline_schedule", schedule, "test");
    const Pipelined pipelined = train_pipeline(settings, device);
    if (world_rank() != 0) continue;
    EXPECT_LE(test::relative_difference(pipelined.parameters, reference.parameters), 1e-5) << schedule;
    ASSERT_TRUE(pipelined.measurements.pipeline.has_value()) << schedule;
    for (const PipelineStageFacts& stage : pipelined.measurements.pipeline->stage) {
      EXPECT_GT(stage.peak_activation_bytes, 0) << schedule;
      EXPECT_GE(stage.peak_step_bytes, stage.peak_activation_bytes) << schedule;
    }
  }
}

}  // namespace
}  // namespace harness::pipeline_test
