#include "harness/rank/worker.h"

#include <mpi.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/gradient_sync.h"
#include "backends/registry.h"
#include "harness/rank/allocator.h"
#include "harness/rank/comm_benchmark.h"
#include "harness/rank/crash_report.h"
#include "harness/rank/marked_sync.h"
#include "harness/rank/partial_flush.h"
#include "harness/rank/run_facts.h"
#include "harness/common/errors.h"
#include "harness/common/clock.h"
#include "harness/common/files.h"
#include "harness/common/machine.h"
#include "harness/common/rank_progress.h"
#include "harness/rank/step_records.h"
#include "harness/results/record.h"
#include "backends/device_staging.h"
#include "workloads/kmeans_driver.h"
#include "harness/rank/trainer.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

struct WorkerArguments {
  Json settings;
  std::string output;
  std::string timeline;  // where rank 0 writes the Chrome trace; empty: none
};

// The point's backend, each call marked in the rank's progress slot (collective).
std::unique_ptr<GradientSync> make_marked_backend(const PointSettings& settings, const Communicator& communicator,
                                                  RankProgressWriter& progress) {
  progress.mark(RankStage::kBackendSetup);
  return std::make_unique<MarkedSync>(make_gradient_sync(settings.backend, backend_options(settings), communicator),
                                      progress);
}


WorkerArguments parse_arguments(int argc, char** argv) {
  WorkerArguments arguments;
  for (int i = 0; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw ConfigError(fmt::format("worker: {} needs a value", flag));
    if (flag == "--settings") {
      arguments.settings = Json::parse(argv[++i]);
    } else if (flag == "--output") {
      arguments.output = argv[++i];
    } else if (flag == "--timeline") {
      arguments.timeline = argv[++i];
    } else {
      throw ConfigError(fmt::format("worker: unknown argument {}", flag));
    }
  }
  if (arguments.settings.is_null() || arguments.output.empty()) {
    throw ConfigError("worker: usage: harness worker --settings JSON --output FILE [--timeline FILE]");
  }
  return arguments;
}

int threads_from_environment() {
  const char* value = std::getenv("HARNESS_THREADS_PER_RANK");
  const int threads = value != nullptr ? std::atoi(value) : 1;
  return threads > 0 ? threads : 1;
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
  // A training loop's lap: `outside_s` of it (evaluations, partial flushes) is eval_s. Flushing
  // is bookkeeping rank 0 does between steps as evaluating is, and eval_s is the one phase for a
  // loop's time that is not training: train_s stays the timed loop's, and the phases still add up.
  void lap_loop(double outside_s) {
    const double loop_s = lap(&RankPhases::train_s);
    const double moved_s = std::min(outside_s, loop_s);
    phases_.train_s -= moved_s;
    phases_.eval_s += moved_s;
  }
  // The phases as if the running loop's lap ended now (a partial write's), without taking it.
  RankPhases so_far(double outside_s) const {
    PhaseClock copy = *this;
    copy.lap_loop(outside_s);
    return copy.finish();
  }
  // The phases up to the last lap; gathering and writing the measurements come after it (the
  // record's finish_s).
  RankPhases finish() {
    phases_.finished_at = last_;
    return phases_;
  }

 private:
  RankPhases phases_;
  double last_;
};

// Rank 0's --output file. While a loop runs, rank 0 writes the measurements so far into it from
// time to time (complete: false, phases up to then), so that a point stopped by its time limit
// keeps them; the final write replaces them.
class OutputFile {
 public:
  OutputFile(std::string path, const PhaseClock& clock) : path_(std::move(path)), clock_(clock) {}
  // What every write holds (the run's facts: kind, world, versions, hosts), set before the loop.
  Measurements& context() { return context_; }
  // Rank 0, while the loop runs: `outside_s` of the loop's time so far went to evaluating or
  // flushing.
  void write_partial(TrainMeasurements train, double outside_s) const {
    Measurements measurements = context_;
    measurements.train = std::move(train);
    write(std::move(measurements), clock_.so_far(outside_s), false);
  }
  void write_partial(CommMeasurements comm, double outside_s) const {
    Measurements measurements = context_;
    measurements.comm = std::move(comm);
    write(std::move(measurements), clock_.so_far(outside_s), false);
  }
  // Rank 0, at the end: `results` holds the kind's measurements.
  void write_final(Measurements results, RankPhases phases) const {
    Measurements measurements = context_;
    measurements.train = std::move(results.train);
    measurements.comm = std::move(results.comm);
    write(std::move(measurements), phases, true);
  }

 private:
  void write(Measurements measurements, const RankPhases& phases, bool complete) const {
    measurements.complete = complete;
    measurements.phases = phases;
    // Partial writes need not reach the disk: the final one replaces them and is durable.
    write_file_atomically(path_, to_json(measurements).dump(1),
                          complete ? Durability::kDurable : Durability::kReplaceable);
  }

  std::string path_;
  const PhaseClock& clock_;
  Measurements context_;
};

std::vector<EpochMeasurement> epoch_measurements(const std::vector<EpochRecord>& records) {
  std::vector<EpochMeasurement> epochs;
  for (const auto& epoch : records) {
    epochs.push_back({epoch.epoch, epoch.train_loss, epoch.test_loss, epoch.test_accuracy,
                      epoch.train_time_s, epoch.eval_time_s, epoch.samples_seen});
  }
  return epochs;
}

// `facts` (what the point knows before training) with what a loop measured: its results so far
// or all of them, and the steps of every rank gathered from them.
TrainMeasurements with_loop(TrainMeasurements facts, const LoopResult& loop, StepSeries steps) {
  facts.steps = std::move(steps);
  facts.steps_per_epoch = loop.steps_per_epoch;
  facts.samples_trained = static_cast<double>(loop.samples_trained);
  facts.train_time_s = loop.train_time_s;
  facts.epochs = epoch_measurements(loop.epochs);
  facts.loss_curve.clear();
  for (const auto& value : loop.loss_curve) facts.loss_curve.push_back({value.samples_seen, value.train_loss});
  return facts;
}



// Measurements of a training point (kind "train"), complete on rank 0.
TrainMeasurements train(const PointSettings& settings, const Communicator& communicator,
                        int cuda_device, PhaseClock& clock, OutputFile& output, Timeline* timeline,
                        RankProgressWriter& progress) {
  const int world_size = communicator.size();
  progress.mark(RankStage::kLoadingData);
  const auto workload = make_workload(settings, cuda_device);
  clock.lap(&RankPhases::data_s);
  const auto backend = make_marked_backend(settings, communicator, progress);
  output.context().exchange_path = exchange_path(*backend, cuda_device != kNoCudaDevice);
  DataParallelTrainer trainer(*workload, *backend, communicator, settings);
  if (timeline != nullptr) trainer.set_timeline(timeline);
  trainer.broadcast_parameters();
  clock.lap(&RankPhases::init_s);
  std::vector<bool> training(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    training[r] = worker_layout(settings, r, world_size).index >= 0;
  }

  TrainMeasurements facts;
  int64_t parameter_count = 0;
  for (const auto& parameter : workload->parameters()) parameter_count += parameter.numel();
  const int training_ranks = worker_layout(settings, communicator.rank(), world_size).workers;
  facts.train_samples = workload->train_size();
  facts.test_samples = workload->test_size();
  facts.training_ranks = training_ranks;
  SgdFacts sgd;
  sgd.parameters = parameter_count;
  sgd.per_rank_batch = per_rank_batch(settings, training_ranks);
  sgd.global_batch = global_batch(settings, training_ranks);
  sgd.final_lr = learning_rate(settings, training_ranks, static_cast<double>(settings.epochs));
  sgd.buckets = static_cast<int64_t>(trainer.bucket_count());
  facts.sgd = sgd;

  const auto write_so_far = [&](const LoopResult& so_far, const StepSeries& steps) {
    output.write_partial(with_loop(facts, so_far, steps), so_far.eval_time_s + so_far.flush_time_s);
  };
  PartialFlush flush(communicator, training, write_so_far);
  const LoopResult result = trainer.train(&flush);
  clock.lap_loop(result.eval_time_s + result.flush_time_s);
  return with_loop(facts, result, gather_step_series(result.steps, training, communicator));
}

// Measurements of a K-means point (workload "kmeans"), complete on rank 0.
TrainMeasurements cluster(const PointSettings& settings, const Communicator& communicator,
                          PhaseClock& clock, OutputFile& output, RankProgressWriter& progress) {
  progress.mark(RankStage::kLoadingData);
  const KMeansData data = load_kmeans_data(settings);
  clock.lap(&RankPhases::data_s);
  const auto backend = make_marked_backend(settings, communicator, progress);
  output.context().exchange_path = exchange_path(*backend, false);  // K-means runs on the host
  clock.lap(&RankPhases::init_s);
  const std::vector<bool> training(communicator.size(), true);

  TrainMeasurements facts;
  facts.train_samples = data.count();
  facts.test_samples = data.count();
  facts.training_ranks = communicator.size();
  KMeansFacts kmeans;
  kmeans.dimensions = data.dimensions;
  facts.kmeans = kmeans;

  const auto write_so_far = [&](const LoopResult& so_far, const StepSeries& steps) {
    TrainMeasurements partial = with_loop(facts, so_far, steps);
    // The centroids are known at the end; the iterations so far are rank 0's epoch records.
    partial.kmeans->iterations = static_cast<int>(so_far.epochs.size());
    output.write_partial(std::move(partial), so_far.eval_time_s + so_far.flush_time_s);
  };
  PartialFlush flush(communicator, training, write_so_far);
  const KMeansResult result =
      run_distributed_kmeans(data, *backend, communicator, settings, &flush);
  clock.lap_loop(result.training.eval_time_s + result.training.flush_time_s);

  TrainMeasurements measurements = with_loop(
      facts, result.training, gather_step_series(result.training.steps, training, communicator));
  measurements.kmeans->iterations = result.iterations;
  measurements.kmeans->converged = result.converged;
  measurements.kmeans->centroids = result.centroids;
  return measurements;
}

// Measurements of a communication benchmark point (kind "comm"), the same on every rank.
CommMeasurements benchmark(const PointSettings& settings, const Communicator& communicator,
                           PhaseClock& clock, OutputFile& output, Timeline* timeline,
                           RankProgressWriter& progress) {
  const auto backend = make_marked_backend(settings, communicator, progress);
  output.context().exchange_path = exchange_path(*backend, settings.device == "cuda");
  clock.lap(&RankPhases::init_s);
  double written_s = 0;  // the partial writes: like a training loop's flushes, eval_s
  const auto size_done = [&](const std::vector<MessageSizeMetrics>& so_far) {
    if (communicator.rank() != 0) return;
    const auto start = Clock::now();
    output.write_partial(CommMeasurements{so_far}, written_s);
    written_s += seconds_since(start);
  };
  CommMeasurements measurements{run_comm_benchmark(*backend, communicator, settings, size_done, timeline)};
  clock.lap_loop(written_s);
  return measurements;
}

void run(const WorkerArguments& arguments, const Communicator& communicator, PhaseClock& clock) {
  const std::string allocator = keep_freed_memory();
  const int world_size = communicator.size();

  // Where this rank stands, for the harness to say if the point hangs (rank_progress.h).
  RankProgressWriter progress(rank_progress_directory(arguments.output), communicator.rank(), processor_name());
  const PointSettings settings = settings_from_json(arguments.settings, "worker: --settings");
  if (settings.ranks != world_size) {
    throw LaunchError(fmt::format("worker: settings ask for {} ranks but MPI started {}",
                                  settings.ranks, world_size));
  }
  const int threads = threads_from_environment();
  at::set_num_threads(threads);
  const int cuda_device = settings.device == "cuda" ? select_cuda_device(communicator) : kNoCudaDevice;

  // Before the loop, so that every partial write has them too.
  OutputFile output(arguments.output, clock);
  Measurements& context = output.context();
  context.kind = settings.kind;
  context.world_size = world_size;
  context.threads_per_rank = threads;
  context.allocator = allocator;
  context.mpi_library = mpi_library_version();
  context.torch_version = TORCH_VERSION;
  context.hosts = all_host_names(communicator);  // collective
  context.machine = this_machine();
  context.oversubscribed = gather_oversubscription(communicator, threads);  // collective
  if (cuda_device != kNoCudaDevice) context.gpus = gather_gpu_facts(communicator, cuda_device, settings.backend);  // collective
  clock.lap(&RankPhases::init_s);

  Timeline timeline;
  Timeline* traced = arguments.timeline.empty() ? nullptr : &timeline;
  Measurements results;
  if (settings.kind == Kind::kComm) {
    results.comm = benchmark(settings, communicator, clock, output, traced, progress);
  } else if (find_workload(settings.workload).algorithm == Algorithm::kLloydKMeans) {
    results.train = cluster(settings, communicator, clock, output, progress);  // validation refuses a timeline
  } else {
    results.train = train(settings, communicator, cuda_device, clock, output, traced, progress);
  }
  progress.mark(RankStage::kFinishing);
  if (traced != nullptr) {
    timeline.write(communicator, arguments.timeline, context.hosts,
                   {{"settings", arguments.settings}, {"mpi_library", context.mpi_library}});  // collective
  }
  if (communicator.rank() == 0) output.write_final(std::move(results), clock.finish());
  progress.mark(RankStage::kDone);
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
  install_crash_report(rank);  // after MPI_Init, whose own handler it replaces
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
