#include "harness/rank/worker.h"

#include <mpi.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "backends/gradient_sync.h"
#include "backends/registry.h"
#include "harness/rank/allocator.h"
#include "harness/rank/comm_benchmark.h"
#include "harness/common/errors.h"
#include "harness/results/results.h"
#include "backends/device_staging.h"
#include "workloads/kmeans_driver.h"
#include "harness/results/metrics.h"
#include "harness/rank/trainer.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

struct WorkerArguments {
  Json settings;
  std::string output;
};

WorkerArguments parse_arguments(int argc, char** argv) {
  WorkerArguments arguments;
  for (int i = 0; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw ConfigError(fmt::format("worker: {} needs a value", flag));
    if (flag == "--settings") {
      arguments.settings = Json::parse(argv[++i]);
    } else if (flag == "--output") {
      arguments.output = argv[++i];
    } else {
      throw ConfigError(fmt::format("worker: unknown argument {}", flag));
    }
  }
  if (arguments.settings.is_null() || arguments.output.empty()) {
    throw ConfigError("worker: usage: harness worker --settings JSON --output FILE");
  }
  return arguments;
}

int threads_from_environment() {
  const char* value = std::getenv("HARNESS_THREADS_PER_RANK");
  const int threads = value != nullptr ? std::atoi(value) : 1;
  return threads > 0 ? threads : 1;
}

std::vector<double> gather_to_root(const std::vector<double>& local, MPI_Comm communicator,
                                   int rank, int world_size) {
  std::vector<double> all(rank == 0 ? local.size() * world_size : 0);
  check_mpi(MPI_Gather(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(),
                       static_cast<int>(local.size()), MPI_DOUBLE, 0, communicator),
            "MPI_Gather(step times)");
  return all;
}

// On rank 0: for every step, the times of the rank whose step took longest (compute and
// communication from that same rank, so they add up to at most its step time), how much of that
// rank's exposed time was waiting for the slowest training rank's compute, and the step's load
// imbalance over the ranks that train (load_imbalance_per_step).
struct RecordedSteps {
  StepTimes slowest;
  std::vector<double> wait_s;
  std::vector<double> imbalance_s;

  Json to_json() const {
    return {{"step_s", slowest.step_s},
            {"compute_s", slowest.compute_s},
            {"comm_s", slowest.comm_s},
            {"exposed_comm_s", slowest.exposed_s},
            {"wait_s", wait_s},
            {"imbalance_s", imbalance_s}};
  }
};

// `training[r]`: whether rank r computes gradients (all but a parameter server that only serves).
RecordedSteps gather_steps(const StepTimes& local, const std::vector<bool>& training,
                           MPI_Comm communicator, int rank, int world_size) {
  const auto step_s = gather_to_root(local.step_s, communicator, rank, world_size);
  const auto compute_s = gather_to_root(local.compute_s, communicator, rank, world_size);
  const auto comm_s = gather_to_root(local.comm_s, communicator, rank, world_size);
  const auto exposed_s = gather_to_root(local.exposed_s, communicator, rank, world_size);
  RecordedSteps recorded;
  if (rank != 0) return recorded;
  const std::size_t steps = local.step_s.size();
  for (std::size_t step = 0; step < steps; ++step) {
    std::size_t worst = step;  // rank 0's entry
    double slowest_compute = 0;
    for (int r = 0; r < world_size; ++r) {
      const std::size_t candidate = r * steps + step;
      if (step_s[candidate] > step_s[worst]) worst = candidate;
      if (training[r]) slowest_compute = std::max(slowest_compute, compute_s[candidate]);
    }
    recorded.slowest.step_s.push_back(step_s[worst]);
    recorded.slowest.compute_s.push_back(compute_s[worst]);
    recorded.slowest.comm_s.push_back(comm_s[worst]);
    recorded.slowest.exposed_s.push_back(exposed_s[worst]);
    // The exchange cannot finish before the slowest training rank joins it.
    recorded.wait_s.push_back(
        std::clamp(slowest_compute - compute_s[worst], 0.0, exposed_s[worst]));
  }
  recorded.imbalance_s = load_imbalance_per_step(compute_s, steps, training);
  return recorded;
}

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, length);
  if (const auto newline = text.find('\n'); newline != std::string::npos) text.resize(newline);
  return text;
}

Json epoch_records(const std::vector<EpochRecord>& records) {
  Json epochs = Json::array();
  for (const auto& epoch : records) {
    epochs.push_back({{"epoch", epoch.epoch},
                      {"train_loss", epoch.train_loss},
                      {"test_loss", epoch.test_loss},
                      {"test_accuracy", epoch.test_accuracy},
                      {"train_time_s", epoch.train_time_s},
                      {"samples_seen", epoch.samples_seen}});
  }
  return epochs;
}

// Measurements of a training point (kind "train"), complete on rank 0.
Json train(const PointSettings& settings, const Communicator& communicator, int cuda_device) {
  const int rank = communicator.rank();
  const int world_size = communicator.size();
  const auto workload = find_workload(settings.workload).make(settings, cuda_device);
  const auto backend = make_gradient_sync(settings.backend, communicator);
  DataParallelTrainer trainer(*workload, *backend, communicator, settings);
  trainer.broadcast_parameters();
  const LoopResult result = trainer.train();
  std::vector<bool> training(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    training[r] = worker_layout(settings, r, world_size).index >= 0;
  }
  const RecordedSteps steps =
      gather_steps(result.steps, training, communicator.handle(), rank, world_size);

  int64_t parameter_count = 0;
  for (const auto& parameter : workload->parameters()) parameter_count += parameter.numel();
  const int training_ranks = worker_layout(settings, rank, world_size).workers;
  Json measurements = Json::object();
  measurements["parameters"] = parameter_count;
  measurements["train_samples"] = workload->train_size();
  measurements["test_samples"] = workload->test_size();
  measurements["training_ranks"] = training_ranks;
  measurements["per_rank_batch"] = per_rank_batch(settings, training_ranks);
  measurements["global_batch"] = global_batch(settings, training_ranks);
  measurements["final_lr"] =
      learning_rate(settings, training_ranks, static_cast<double>(settings.epochs));
  measurements["steps_per_epoch"] = result.steps_per_epoch;
  measurements["samples_trained"] = result.samples_trained;
  measurements["train_time_s"] = result.train_time_s;
  measurements["buckets"] = trainer.bucket_count();
  measurements["steps"] = steps.to_json();
  measurements["epochs"] = epoch_records(result.epochs);
  return measurements;
}

// Measurements of a K-means point (workload "kmeans"), complete on rank 0.
Json cluster(const PointSettings& settings, const Communicator& communicator) {
  const int rank = communicator.rank();
  const int world_size = communicator.size();
  const KMeansData data = load_kmeans_data(settings);
  const auto backend = make_gradient_sync(settings.backend, communicator);
  const KMeansResult result = run_distributed_kmeans(data, *backend, communicator, settings);
  const RecordedSteps steps = gather_steps(result.training.steps,
                                          std::vector<bool>(world_size, true), communicator.handle(),
                                          rank, world_size);

  Json measurements = Json::object();
  measurements["train_samples"] = data.count();
  measurements["test_samples"] = data.count();
  measurements["training_ranks"] = world_size;
  measurements["dimensions"] = data.dimensions;
  measurements["iterations"] = result.iterations;
  measurements["converged"] = result.converged;
  measurements["centroids"] = result.centroids;
  measurements["steps_per_epoch"] = 1;
  measurements["samples_trained"] = result.training.samples_trained;
  measurements["train_time_s"] = result.training.train_time_s;
  measurements["steps"] = steps.to_json();
  measurements["epochs"] = epoch_records(result.training.epochs);
  return measurements;
}

// Measurements of a communication benchmark point (kind "comm").
Json benchmark_communication(const PointSettings& settings, const Communicator& communicator) {
  const auto backend = make_gradient_sync(settings.backend, communicator);
  Json sizes = Json::array();
  for (const auto& size : run_comm_benchmark(*backend, communicator, settings)) {
    sizes.push_back(to_json(size));
  }
  return Json{{"sizes", std::move(sizes)}};
}

void run(const WorkerArguments& arguments, const Communicator& communicator) {
  const std::string allocator = keep_freed_memory();
  const int rank = communicator.rank();
  const int world_size = communicator.size();

  const PointSettings settings = settings_from_json(arguments.settings, "worker: --settings");
  if (settings.ranks != world_size) {
    throw LaunchError(fmt::format("worker: settings ask for {} ranks but MPI started {}",
                                  settings.ranks, world_size));
  }
  const int threads = threads_from_environment();
  at::set_num_threads(threads);
  const int cuda_device = settings.device == "cuda" ? select_cuda_device(communicator) : -1;

  Json kind_measurements;
  if (settings.kind == Kind::kComm) {
    kind_measurements = benchmark_communication(settings, communicator);
  } else if (find_workload(settings.workload).algorithm == Algorithm::kLloydKMeans) {
    kind_measurements = cluster(settings, communicator);
  } else {
    kind_measurements = train(settings, communicator, cuda_device);
  }
  const auto hosts = all_host_names(communicator);
  if (rank != 0) return;

  Json measurements = Json::object();
  measurements["schema_version"] = kRecordSchemaVersion;
  measurements["kind"] = kind_name(settings.kind);
  measurements["world_size"] = world_size;
  measurements["threads_per_rank"] = threads;
  measurements["allocator"] = allocator;
  measurements["hosts"] = hosts;
  measurements["mpi_library"] = mpi_library_version();
  measurements["torch_version"] = TORCH_VERSION;
  measurements.update(kind_measurements);
  write_file_atomically(arguments.output, measurements.dump(1));
}

}  // namespace

int worker_main(int argc, char** argv) {
  // SERIALIZED: with overlap a communication thread makes the backend's MPI calls while the
  // training thread runs backward (never both at once; see gradient_buckets.h).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    // Inter-op threads are never used by this loop; fix them before any parallel work starts.
    at::set_num_interop_threads(1);
    run(parse_arguments(argc, argv), MPI_COMM_WORLD);
  } catch (const std::exception& error) {
    std::cerr << fmt::format("harness worker (rank {}): {}\n", rank, error.what()) << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return 0;
}

}  // namespace harness
