#include "harness/rank/worker_core.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/device_staging.h"
#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/machine.h"
#include "harness/rank/allocator.h"
#include "harness/rank/comm_benchmark.h"
#include "harness/rank/crash_report.h"
#include "harness/rank/marked_sync.h"
#include "harness/rank/run_facts.h"
#include "harness/rank/torch_version.h"

namespace harness {
namespace {

struct WorkerArguments {
  Json settings;
  std::string output;
  std::string timeline;  // where rank 0 writes the Chrome trace; empty: none
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

void run(const WorkerArguments& arguments, const Communicator& communicator, PhaseClock& clock,
         ThreadSetup setup_threads, PointRunner run_point) {
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
  if (setup_threads != nullptr) setup_threads(threads);  // part of init_s, as the rest of the setup
  const int cuda_device = settings.device == "cuda" ? select_cuda_device(communicator) : kNoCudaDevice;

  // Before the loop, so that every partial write has them too.
  OutputFile output(arguments.output, clock);
  Measurements& context = output.context();
  context.kind = settings.kind;
  context.world_size = world_size;
  context.threads_per_rank = threads;
  context.allocator = allocator;
  context.mpi_library = mpi_library_version();
  context.torch_version = built_torch_version();
  context.hosts = all_host_names(communicator);  // collective
  context.machine = this_machine();
  context.oversubscribed = gather_oversubscription(communicator, threads);  // collective
  if (cuda_device != kNoCudaDevice) context.gpus = gather_gpu_facts(communicator, cuda_device, settings.backend);  // collective
  clock.lap(&RankPhases::init_s);

  Timeline timeline;
  Timeline* traced = arguments.timeline.empty() ? nullptr : &timeline;
  Measurements results =
      run_point({settings, communicator, cuda_device, threads, clock, output, traced, progress});
  progress.mark(RankStage::kFinishing);
  if (traced != nullptr) {
    timeline.write(communicator, arguments.timeline, context.hosts,
                   {{"settings", arguments.settings}, {"mpi_library", context.mpi_library}});  // collective
  }
  if (communicator.rank() == 0) output.write_final(std::move(results), clock.finish());
  progress.mark(RankStage::kDone);
}

}  // namespace

double PhaseClock::lap(double RankPhases::*phase) {
  const double now = wall_clock_s();
  const double elapsed = now - last_;
  phases_.*phase += elapsed;
  last_ = now;
  return elapsed;
}

void PhaseClock::lap_loop(double outside_s) {
  const double loop_s = lap(&RankPhases::train_s);
  const double moved_s = std::min(outside_s, loop_s);
  phases_.train_s -= moved_s;
  phases_.eval_s += moved_s;
}

RankPhases PhaseClock::so_far(double outside_s) const {
  PhaseClock copy = *this;
  copy.lap_loop(outside_s);
  return copy.finish();
}

RankPhases PhaseClock::finish() {
  phases_.finished_at = last_;
  return phases_;
}

void OutputFile::write_partial(TrainMeasurements train, double outside_s) const {
  Measurements measurements = context_;
  measurements.train = std::move(train);
  write(std::move(measurements), clock_.so_far(outside_s), false);
}

void OutputFile::write_partial(CommMeasurements comm, double outside_s) const {
  Measurements measurements = context_;
  measurements.comm = std::move(comm);
  write(std::move(measurements), clock_.so_far(outside_s), false);
}

void OutputFile::write_final(Measurements results, RankPhases phases) const {
  Measurements measurements = context_;
  measurements.train = std::move(results.train);
  measurements.comm = std::move(results.comm);
  write(std::move(measurements), phases, true);
}

void OutputFile::write(Measurements measurements, const RankPhases& phases, bool complete) const {
  measurements.complete = complete;
  measurements.phases = phases;
  // Partial writes need not reach the disk: the final one replaces them and is durable.
  write_file_atomically(path_, to_json(measurements).dump(1),
                        complete ? Durability::kDurable : Durability::kReplaceable);
}

std::unique_ptr<GradientSync> make_marked_backend(const PointSettings& settings, const Communicator& communicator,
                                                  RankProgressWriter& progress) {
  progress.mark(RankStage::kBackendSetup);
  BackendOptions options = backend_options(settings);
  // The rank's cores as the launcher resolved them: staging's "auto" reduction threads take at
  // most that many (staging_levers.h).
  if (options.threads_per_rank <= 0) options.threads_per_rank = threads_from_environment();
  return std::make_unique<MarkedSync>(make_gradient_sync(settings.backend, options, communicator), progress);
}

CommMeasurements run_comm_point(const PointContext& point) {
  const auto backend = make_marked_backend(point.settings, point.communicator, point.progress);
  point.output.context().exchange_path = exchange_path(*backend, point.settings.device == "cuda");
  point.output.context().staging_levers =
      staging_lever_steps(*backend, point.settings.device == "cuda", staging_chunk_floats(point.settings));
  point.clock.lap(&RankPhases::init_s);
  double written_s = 0;  // the partial writes: like a training loop's flushes, eval_s
  const auto size_done = [&](const std::vector<MessageSizeMetrics>& so_far) {
    if (point.communicator.rank() != 0) return;
    const auto start = Clock::now();
    point.output.write_partial(CommMeasurements{so_far}, written_s);
    written_s += seconds_since(start);
  };
  CommMeasurements measurements{
      run_comm_benchmark(*backend, point.communicator, point.settings, size_done, point.timeline)};
  point.clock.lap_loop(written_s);
  return measurements;
}

int rank_program_main(int argc, char** argv, ThreadSetup setup_threads, PointRunner run_point) {
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
    run(parse_arguments(argc, argv), MPI_COMM_WORLD, clock, setup_threads, run_point);
  } catch (const std::exception& error) {
    std::cerr << fmt::format("harness worker (rank {}): {}\n", rank, error.what()) << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return 0;
}

}  // namespace harness
