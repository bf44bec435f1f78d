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
#include "harness/common/clock.h"
#include "harness/common/files.h"
#include "harness/rank/step_records.h"
#include "harness/results/record.h"
#include "backends/device_staging.h"
#include "workloads/kmeans_driver.h"
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

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, length);
  if (const auto newline = text.find('\n'); newline != std::string::npos) text.resize(newline);
  return text;
}

// Where rank 0's time goes, phase after phase: every second between started_at and the last lap
// lands in exactly one phase.
class PhaseClock {
 public:
  explicit PhaseClock(double started_at) : last_(started_at) { phases_.started_at = started_at; }
  // The time since the previous lap, added to `phase`.
  double lap(double RankPhases::*phase) {
    const double now = wall_clock_s();
    const double elapsed = now - last_;
    phases_.*phase += elapsed;
    last_ = now;
    return elapsed;
  }
  // The phases up to the last lap; gathering and writing the measurements come after it (the
  // record's finish_s).
  RankPhases finish() {
    phases_.finished_at = last_;
    return phases_;
  }
  RankPhases& phases() { return phases_; }

 private:
  RankPhases phases_;
  double last_;
};

// The training loop's time: the evaluations apart.
void split_loop_time(PhaseClock& clock, double eval_time_s) {
  const double loop_s = clock.lap(&RankPhases::train_s);
  const double eval_s = std::min(eval_time_s, loop_s);
  clock.phases().train_s -= eval_s;
  clock.phases().eval_s += eval_s;
}

std::vector<EpochMeasurement> epoch_measurements(const std::vector<EpochRecord>& records) {
  std::vector<EpochMeasurement> epochs;
  for (const auto& epoch : records) {
    epochs.push_back({epoch.epoch, epoch.train_loss, epoch.test_loss, epoch.test_accuracy,
                      epoch.train_time_s, epoch.eval_time_s, epoch.samples_seen});
  }
  return epochs;
}

// Measurements of a training point (kind "train"), complete on rank 0.
TrainMeasurements train(const PointSettings& settings, const Communicator& communicator,
                        int cuda_device, PhaseClock& clock) {
  const int world_size = communicator.size();
  const auto workload = find_workload(settings.workload).make(settings, cuda_device);
  clock.lap(&RankPhases::data_s);
  const auto backend = make_gradient_sync(settings.backend, communicator);
  DataParallelTrainer trainer(*workload, *backend, communicator, settings);
  trainer.broadcast_parameters();
  clock.lap(&RankPhases::init_s);
  const LoopResult result = trainer.train();
  split_loop_time(clock, result.eval_time_s);
  std::vector<bool> training(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    training[r] = worker_layout(settings, r, world_size).index >= 0;
  }

  TrainMeasurements measurements;
  measurements.steps = gather_step_series(result.steps, training, communicator);
  int64_t parameter_count = 0;
  for (const auto& parameter : workload->parameters()) parameter_count += parameter.numel();
  const int training_ranks = worker_layout(settings, communicator.rank(), world_size).workers;
  measurements.train_samples = workload->train_size();
  measurements.test_samples = workload->test_size();
  measurements.training_ranks = training_ranks;
  measurements.steps_per_epoch = result.steps_per_epoch;
  measurements.samples_trained = static_cast<double>(result.samples_trained);
  measurements.train_time_s = result.train_time_s;
  measurements.epochs = epoch_measurements(result.epochs);
  SgdFacts sgd;
  sgd.parameters = parameter_count;
  sgd.per_rank_batch = per_rank_batch(settings, training_ranks);
  sgd.global_batch = global_batch(settings, training_ranks);
  sgd.final_lr = learning_rate(settings, training_ranks, static_cast<double>(settings.epochs));
  sgd.buckets = static_cast<int64_t>(trainer.bucket_count());
  measurements.sgd = sgd;
  return measurements;
}

// Measurements of a K-means point (workload "kmeans"), complete on rank 0.
TrainMeasurements cluster(const PointSettings& settings, const Communicator& communicator,
                          PhaseClock& clock) {
  const KMeansData data = load_kmeans_data(settings);
  clock.lap(&RankPhases::data_s);
  const auto backend = make_gradient_sync(settings.backend, communicator);
  clock.lap(&RankPhases::init_s);
  const KMeansResult result = run_distributed_kmeans(data, *backend, communicator, settings);
  split_loop_time(clock, result.training.eval_time_s);

  TrainMeasurements measurements;
  measurements.steps = gather_step_series(result.training.steps,
                                          std::vector<bool>(communicator.size(), true), communicator);
  measurements.train_samples = data.count();
  measurements.test_samples = data.count();
  measurements.training_ranks = communicator.size();
  measurements.steps_per_epoch = 1;
  measurements.samples_trained = static_cast<double>(result.training.samples_trained);
  measurements.train_time_s = result.training.train_time_s;
  measurements.epochs = epoch_measurements(result.training.epochs);
  KMeansFacts kmeans;
  kmeans.dimensions = data.dimensions;
  kmeans.iterations = result.iterations;
  kmeans.converged = result.converged;
  kmeans.centroids = result.centroids;
  measurements.kmeans = std::move(kmeans);
  return measurements;
}

void run(const WorkerArguments& arguments, const Communicator& communicator, PhaseClock& clock) {
  const std::string allocator = keep_freed_memory();
  const int world_size = communicator.size();

  const PointSettings settings = settings_from_json(arguments.settings, "worker: --settings");
  if (settings.ranks != world_size) {
    throw LaunchError(fmt::format("worker: settings ask for {} ranks but MPI started {}",
                                  settings.ranks, world_size));
  }
  const int threads = threads_from_environment();
  at::set_num_threads(threads);
  const int cuda_device = settings.device == "cuda" ? select_cuda_device(communicator) : kNoCudaDevice;
  clock.lap(&RankPhases::init_s);

  Measurements measurements;
  measurements.kind = settings.kind;
  if (settings.kind == Kind::kComm) {
    const auto backend = make_gradient_sync(settings.backend, communicator);
    clock.lap(&RankPhases::init_s);
    measurements.comm = CommMeasurements{run_comm_benchmark(*backend, communicator, settings)};
    clock.lap(&RankPhases::train_s);
  } else if (find_workload(settings.workload).algorithm == Algorithm::kLloydKMeans) {
    measurements.train = cluster(settings, communicator, clock);
  } else {
    measurements.train = train(settings, communicator, cuda_device, clock);
  }
  measurements.hosts = all_host_names(communicator);
  if (communicator.rank() != 0) return;
  measurements.world_size = world_size;
  measurements.threads_per_rank = threads;
  measurements.allocator = allocator;
  measurements.mpi_library = mpi_library_version();
  measurements.torch_version = TORCH_VERSION;
  measurements.phases = clock.finish();
  write_file_atomically(arguments.output, to_json(measurements).dump(1));
}

}  // namespace

int worker_main(int argc, char** argv) {
  PhaseClock clock(wall_clock_s());  // before MPI_Init: starting MPI is part of the rank's setup
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
    run(parse_arguments(argc, argv), MPI_COMM_WORLD, clock);
  } catch (const std::exception& error) {
    std::cerr << fmt::format("harness worker (rank {}): {}\n", rank, error.what()) << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return 0;
}

}  // namespace harness
