#include "harness/study/validate.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backends/cuda_ipc_allreduce.h"
#include "backends/device_staging.h"
#include "backends/nccl_allreduce.h"
#include "harness/common/errors.h"
#include "workloads/registry.h"

namespace harness {
namespace {

std::string validation_error(const std::string& text, const ResourceLimits& limits = {}) {
  try {
    const Experiment experiment = parse_experiment(text, "exp.json");
    validate_points(experiment, expand(experiment), limits);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(Validate, AcceptsTheDefaults) {
  EXPECT_EQ(validation_error(R"({"name": "ok", "sweep": {"ranks": [1, 2]}})"), "");
}

// The loss curve lives in the record: a point may keep at most kMaxLossValues of it.
TEST(Validate, ALossCurveFinerThanTheBoundIsRefused) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"epochs": 20000, "batch_size": 120, "loss_every": 1}})"),
            fmt::format("exp.json: settings.loss_every: expected at most {} loss values per point, got 20000 "
                        "steps / 1 = 20000 (0 keeps about 100)",
                        kMaxLossValues));
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"epochs": 20000, "batch_size": 120, "loss_every": 2}})"),
            "");
}

TEST(Validate, UnknownBackendNamesTheSweepEntryAndListsValidNames) {
  EXPECT_EQ(validation_error(R"({"name": "x", "sweep": {"backend": ["allreduce", "horovod"]}})"),
            "exp.json: sweep.backend[1]: unknown backend \"horovod\" (expected one of: allreduce, ring, ps, shm, hier, "
            "gloo, nccl, cuda_ipc)");
}

TEST(Validate, UnknownWorkloadNamesTheSetting) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "bert"}})"),
            "exp.json: settings.workload: unknown workload \"bert\" (expected one of: iris_mlp, mnist_cnn, resnet, "
            "torchscript, gpt, kmeans)");
}

// The name is the user's: a newline in it must not split the message, nor a long one swell it.
TEST(Validate, UnknownNamesAreEchoedEscapedAndShort) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "bad\nline2"}})"),
            "exp.json: settings.workload: unknown workload \"bad\\nline2\" (expected one of: "
            "iris_mlp, mnist_cnn, resnet, torchscript, gpt, kmeans)");
  const std::string message = validation_error(R"({"name": "x", "settings": {"backend": ")" +
                                               std::string(1000000, 'b') + "\"}}");
  EXPECT_EQ(message, "exp.json: settings.backend: unknown backend \"" + std::string(56, 'b') +
                         "... (expected one of: allreduce, ring, ps, shm, hier, gloo, nccl, "
                         "cuda_ipc)");
}

ResourceLimits ranks_here() {
  ResourceLimits limits;
  limits.gpus_as_here = true;  // the local launcher's
  return limits;
}

// Where the ranks run on this machine, it must have a GPU; where they run on other nodes (SLURM
// from a login node without one), only the build must have CUDA (and, to train, LibTorch).
TEST(Validate, CudaIsRejectedBeforeLaunchWhereItCannotRun) {
  const CudaStatus status = cuda_status();
  if (status.usable) GTEST_SKIP() << "this machine has a CUDA device";
  for (const char* kind : {"train", "comm"}) {
    const std::string text = fmt::format(R"({{"name": "x", "settings": {{"kind": "{}", "device": "cuda"}}}})", kind);
    EXPECT_EQ(validation_error(text, ranks_here()),
              "exp.json: settings.device: expected \"cpu\" on this build and machine: " + status.reason);
    const std::string elsewhere = validation_error(text);
    if (!status.built) {
      EXPECT_EQ(elsewhere, "exp.json: settings.device: expected \"cpu\" on this build and machine: " + status.reason);
    } else if (std::string(kind) == "comm") {
      EXPECT_EQ(elsewhere, "") << "a CUDA build on a login node: the nodes have the GPUs";
    } else {
      // Training also needs LibTorch's CUDA: Debian's LibTorch (CI's CUDA configuration) has none.
      const std::string problem = training_device_problem("cuda");
      EXPECT_EQ(elsewhere, problem.empty() ? "" : "exp.json: settings.device: expected \"cpu\" on this build and machine: " + problem);
    }
  }
}

// Backend nccl where it cannot run: not in this build (a CPU build, or NCCL not found), host
// memory (device "cpu"), no GPU (the device's reason, naming no backend), and where a GPU is, more
// ranks on this machine than GPUs (only for a launcher that runs ranks where this machine's GPUs
// are: the local one).
TEST(Validate, NcclIsRefusedBeforeLaunchWithTheSettingAtFault) {
  const std::string unavailable = nccl_unavailable_reason();
  const std::string on_host = validation_error(R"({"name": "x", "settings": {"kind": "comm", "backend": "nccl"}})");
  if (!unavailable.empty()) {
    EXPECT_EQ(on_host, "exp.json: settings.backend: " + unavailable);
  } else {
    EXPECT_EQ(on_host.rfind("exp.json: point ", 0), 0U) << on_host;
    EXPECT_NE(on_host.find(
                  "): device: backend \"nccl\" reduces GPU memory only; expected \"cuda\", got \"cpu\""),
              std::string::npos)
        << on_host;
  }
  const CudaStatus cuda = cuda_status();
  const std::string on_device =
      validation_error(R"({"name": "x", "settings": {"kind": "comm", "backend": "nccl", "device": "cuda"}})", ranks_here());
  if (!cuda.usable) {
    EXPECT_EQ(on_device, "exp.json: settings.device: expected \"cpu\" on this build and machine: " + cuda.reason);
    return;
  }
  if (!unavailable.empty()) {
    EXPECT_EQ(on_device, "exp.json: settings.backend: " + unavailable);
    return;
  }
  EXPECT_EQ(on_device, "");
  const std::string crowded = fmt::format(
      R"({{"name": "x", "settings": {{"kind": "comm", "backend": "nccl", "device": "cuda", "ranks": {}}}}})",
      cuda.devices + 1);
  const Experiment experiment = parse_experiment(crowded, "exp.json");
  EXPECT_NO_THROW(validate_points(experiment, expand(experiment))) << "GPUs unknown: checked when made";
  ResourceLimits local;
  local.gpus_as_here = true;
  try {
    validate_points(experiment, expand(experiment), local);
    ADD_FAILURE() << cuda.devices + 1 << " ranks on " << cuda.devices << " GPUs accepted";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find(": ranks: " + nccl_gpu_sharing_problem(cuda.devices + 1, cuda.devices)),
              std::string::npos)
        << error.what();
  }
}

// Backend cuda_ipc where it cannot run: not in this build (a CPU build), host memory (device
// "cpu"), no GPU where the ranks run here (the device's reason), ranks on several nodes; ranks
// sharing this machine's GPUs are accepted (that is what it is for). Where the ranks run on other
// nodes (SLURM from a login node), a CUDA build is enough to get to the backend's own refusals.
TEST(Validate, CudaIpcIsRefusedBeforeLaunchWithTheSettingAtFault) {
  const std::string unavailable = cuda_ipc_unavailable_reason();
  const std::string on_host = validation_error(R"({"name": "x", "settings": {"kind": "comm", "backend": "cuda_ipc"}})");
  if (!unavailable.empty()) {
    EXPECT_EQ(on_host, "exp.json: settings.backend: " + unavailable);
  } else {
    EXPECT_EQ(on_host.rfind("exp.json: point ", 0), 0U) << on_host;
    EXPECT_NE(on_host.find(
                  "): device: backend \"cuda_ipc\" reduces GPU memory only; expected \"cuda\", got \"cpu\""),
              std::string::npos)
        << on_host;
  }
  const CudaStatus cuda = cuda_status();
  const char* on_device = R"({"name": "x", "settings": {"kind": "comm", "backend": "cuda_ipc", "device": "cuda"}})";
  const std::string device_refused = "exp.json: settings.device: expected \"cpu\" on this build and machine: ";
  EXPECT_EQ(validation_error(on_device, ranks_here()), cuda.usable ? "" : device_refused + cuda.reason);
  if (!cuda.built) {
    EXPECT_EQ(validation_error(on_device), device_refused + cuda.reason);
    return;
  }
  EXPECT_EQ(unavailable, "") << "every CUDA build has it";
  EXPECT_EQ(validation_error(on_device), "");
  const std::string across_nodes = validation_error(
      R"({"name": "x", "settings": {"kind": "comm", "backend": "cuda_ipc", "device": "cuda", "ranks": 4, "nodes": 2}})");
  EXPECT_NE(across_nodes.find("): nodes: backend \"cuda_ipc\" needs every rank on one node"), std::string::npos)
      << across_nodes;
  if (!cuda.usable) return;
  const std::string crowded = fmt::format(
      R"({{"name": "x", "settings": {{"kind": "comm", "backend": "cuda_ipc", "device": "cuda", "ranks": {}}}}})",
      cuda.devices + 1);
  EXPECT_EQ(validation_error(crowded, ranks_here()), "") << "ranks may share a GPU";
}

TEST(Validate, EngineMustBeOneTheWorkloadHas) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "mnist_cnn", "engine": "blas"}})"),
            "exp.json: settings.engine: expected \"torch\" for workload mnist_cnn, got \"blas\"");
  EXPECT_EQ(validation_error(R"({"name": "x", "sweep": {"engine": ["torch", "blas"]}})"), "");
}

TEST(Validate, OverlapNeedsAnEngineWhoseBackwardRunsThroughAutograd) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"engine": "blas", "overlap": true}})"),
            "exp.json: settings.overlap: expected false with engine \"blas\": its backward does not run through "
            "autograd, so no gradient is ready before it ends and nothing can overlap it");
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"engine": "torch", "overlap": true}})"), "");
}

TEST(Validate, KMeansNeedsAtLeastAsManyPointsAsClusters) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "kmeans", "dataset_size": 5,
                                 "kmeans_k": 6}})"),
            "exp.json: settings.kmeans_k: expected at most 5 clusters (the points used), got 6");
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "kmeans",
                                 "kmeans_data": "blobs", "dataset_size": 20000000}})"),
            "exp.json: settings.dataset_size: expected at most 16000000 (the synthetic kmeans "
            "samples that fit in memory), got 20000000");
}

TEST(Validate, KMeansWarmupIterationsAreFewerThanItsIterations) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "kmeans", "epochs": 5,
                                 "warmup_steps": 5}})"),
            "exp.json: settings.warmup_steps: expected fewer warm-up iterations than the 5 iterations (epochs) "
            "of workload kmeans, got 5");
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "kmeans", "epochs": 5, "warmup_steps": 4}})"),
            "");
}

TEST(Validate, SyntheticResNetSetMustFitInMemory) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"workload": "resnet", "image_size": 224,
                                 "dataset_size": 100000}})"),
            "exp.json: settings.dataset_size: expected at most 14266 (the synthetic resnet samples "
            "that fit in memory), got 100000");
}

TEST(Validate, SyntheticResNetTestSetMustFitInMemory) {
  const std::string message = validation_error(
      R"({"name": "x", "settings": {"workload": "resnet", "test_size": 100000000}})");
  EXPECT_NE(message.find("test_size: expected at most "), std::string::npos) << message;
  EXPECT_NE(message.find("fit in memory), got 100000000"), std::string::npos) << message;
}

// Every value of a test_size sweep is checked, not only the first one seen for a data set.
TEST(Validate, EveryTestSizeOfASweepIsChecked) {
  const std::string message = validation_error(
      R"({"name": "x", "settings": {"workload": "mnist_cnn"}, "sweep": {"test_size": [100, 20000]}})");
  EXPECT_NE(message.find("test_size: expected at most 10000 (the held-out images), got 20000"),
            std::string::npos)
      << message;
}

TEST(Validate, DatasetLargerThanTheDataIsRejected) {
  EXPECT_EQ(validation_error(R"({"name": "x", "sweep": {"dataset_size": [60, 500]}})"),
            "exp.json: sweep.dataset_size[1]: expected at most 120 (the iris_mlp training "
            "samples), got 500");
}

TEST(Validate, GlobalBatchLargerThanTheDataIsRejected) {
  const std::string message =
      validation_error(R"({"name": "x", "settings": {"ranks": 4, "batch_size": 40}})");
  EXPECT_NE(message.find("batch_size: the global batch of 160 (4 training ranks × 40) exceeds the "
                         "120 training samples"),
            std::string::npos)
      << message;
}

TEST(Validate, StrongScalingSplitsTheGlobalBatchEvenly) {
  EXPECT_EQ(validation_error(
                R"({"name": "x", "settings": {"scaling": "strong", "batch_size": 12}, "sweep": {"ranks": [1, 2, 3, 4]}})"),
            "");
  const std::string message = validation_error(
      R"({"name": "x", "settings": {"scaling": "strong", "batch_size": 10, "ranks": 3}})");
  EXPECT_NE(message.find("batch_size: scaling \"strong\" splits the global batch 10 evenly over 3 "
                         "training ranks; expected a multiple of 3"),
            std::string::npos)
      << message;
}

TEST(Validate, ServingOnlyParameterServerNeedsTwoRanks) {
  const std::string message =
      validation_error(R"({"name": "x", "settings": {"backend": "ps", "ranks": 1}})");
  EXPECT_NE(message.find("ranks: backend \"ps\" without ps_server_trains needs at least 2 ranks"),
            std::string::npos)
      << message;
  EXPECT_EQ(validation_error(
                R"({"name": "x", "settings": {"backend": "ps", "ranks": 1, "ps_server_trains": true}})"),
            "");
}

// The delayed rank must be one of the point's ranks where there is a delay; without one the
// rank is not read, so a ranks sweep from 1 with the delay off there is not refused for it.
TEST(Validate, ADelayedRankIsOneOfThePointsRanksWhereThereIsADelay) {
  const std::string message = validation_error(
      R"({"name": "x", "settings": {"ranks": 2, "inject_compute_delay_ms": 5, "inject_compute_delay_rank": 2}})");
  EXPECT_NE(message.find("inject_compute_delay_rank: expected a rank below ranks (2), got 2"), std::string::npos)
      << message;
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"inject_compute_delay_rank": 1},
      "sweep": {"ranks": [1, 2, 4], "inject_compute_delay_ms": [0, 10]},
      "exclude": [{"ranks": 1, "inject_compute_delay_ms": 10}]})"),
            "");
}

TEST(Validate, SharedMemoryNeedsOneNodeAndNamesHier) {
  // Training and the comm benchmark alike; the validation runs before any launcher's limits.
  for (const char* kind : {"train", "comm"}) {
    const std::string message = validation_error(fmt::format(
        R"({{"name": "x", "settings": {{"kind": "{}", "backend": "shm", "ranks": 4, "nodes": 2}}}})", kind));
    EXPECT_NE(message.find("nodes: backend \"shm\" needs every rank on one node"), std::string::npos) << message;
    EXPECT_NE(message.find("or backend \"hier\""), std::string::npos) << message;
  }
}

// The reduction's threads are the rank's own: no more than threads_per_rank, which must be set
// (left to the launcher, it is cores / ranks of whatever machine runs the point).
TEST(Validate, ReduceThreadsFitTheRanksThreads) {
  for (const char* backend : {"shm", "hier"}) {
    const std::string message = validation_error(fmt::format(
        R"({{"name": "x", "settings": {{"backend": "{}", "ranks": 2, "threads_per_rank": 2, "shm_reduce_threads": 4}}}})",
        backend));
    EXPECT_NE(message.find("shm_reduce_threads: 4 threads outnumber the rank's threads_per_rank 2 (they run on the "
                           "rank's own cores); expected at most 2, or threads_per_rank 4"),
              std::string::npos)
        << message;
    EXPECT_EQ(validation_error(fmt::format(
                  R"({{"name": "x", "settings": {{"backend": "{}", "ranks": 2, "threads_per_rank": 4, "shm_reduce_threads": 4}}}})",
                  backend)),
              "");
    const std::string unset = validation_error(fmt::format(
        R"({{"name": "x", "settings": {{"backend": "{}", "ranks": 2, "shm_reduce_threads": 4}}}})", backend));
    EXPECT_NE(unset.find("shm_reduce_threads: 4 threads need threads_per_rank set (they run on the rank's own "
                         "cores, which ranks x threads_per_rank counts); expected threads_per_rank 4 or more"),
              std::string::npos)
        << unset;
    EXPECT_EQ(validation_error(fmt::format(
                  R"({{"name": "x", "settings": {{"backend": "{}", "ranks": 2, "shm_reduce_threads": 1}}}})", backend)),
              "");
  }
}

TEST(Validate, ServingOnlyParameterServerShardsOverTheWorkers) {
  // 3 ranks, 2 of them train: 2 × 60 fits the 120 samples, 3 × 60 would not.
  EXPECT_EQ(validation_error(
                R"({"name": "x", "settings": {"backend": "ps", "ranks": 3, "batch_size": 60}})"),
            "");
}

TEST(Validate, TooManyStepsPerPointIsRejected) {
  const std::string message =
      validation_error(R"({"name": "x", "settings": {"epochs": 100000, "batch_size": 1}})");
  EXPECT_NE(message.find("epochs: expected at most 2000000 steps per point, got 100000 epochs × "
                         "120 steps = 12000000"),
            std::string::npos)
      << message;
}

TEST(Validate, CommBenchmarkChecksItsSizesAndNotTheData) {
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"kind": "comm", "ranks": 4,
                                 "batch_size": 1000, "backend": "ps"}})"),
            "");
  EXPECT_EQ(validation_error(R"({"name": "x", "settings": {"kind": "comm", "comm_min_bytes": 64,
                                 "comm_max_bytes": 16}})"),
            "exp.json: settings.comm_min_bytes: expected comm_min_bytes (64) <= comm_max_bytes (16)");
}

TEST(Validate, MissingDataFileNamesTheSettingAndPath) {
  const std::string message =
      validation_error(R"({"name": "x", "settings": {"data_path": "/nonexistent/iris.csv"}})");
  EXPECT_NE(message.find("data_path: /nonexistent/iris.csv: cannot open Iris CSV file"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace harness
