#include "workloads/kmeans_driver.h"

#include "backends/injected_delay.h"
#include "harness/common/clock.h"

namespace harness {

KMeansResult run_distributed_kmeans(const KMeansData& data, GradientSync& backend,
                                    const Communicator& communicator, const PointSettings& settings,
                                    LoopFlush* flush) {
  const int rank = communicator.rank();
  const int ranks = communicator.size();
  const KMeansOptions options = kmeans_options(settings);
  const int64_t n = data.count();
  const int64_t begin = n * rank / ranks;
  const int64_t end = n * (rank + 1) / ranks;

  const KMeansBufferLayout layout{options.k, data.dimensions, data.classes};
  KMeansResult result;
  result.centroids = initial_centroids(data, options.k, static_cast<uint64_t>(settings.seed));
  result.training.steps_per_epoch = 1;
  std::vector<float> buffer(layout.size());

  check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
  double loop_start = MPI_Wtime();
  // The first warmup_steps iterations run untimed (the first touches of the data and the
  // backend's first calls cost several iterations' time); the timing starts after them.
  const int64_t untimed = settings.warmup_steps;
  int64_t samples_seen = 0;
  for (int iteration = 1; iteration <= settings.epochs; ++iteration) {
    const bool timed = iteration > untimed;
    if (untimed > 0 && iteration == untimed + 1) {
      check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
      loop_start = MPI_Wtime();
    }
    if (flush != nullptr && flush->due(result.training.steps.step_s.size())) {
      // The training time of the iterations so far, measured as at the end (rank 0's counts).
      result.training.train_time_s = MPI_Wtime() - loop_start - result.training.flush_time_s;
      result.training.flush_time_s += flush->flush(result.training);
    }
    const auto start = Clock::now();
    accumulate_shard(data, begin, end, result.centroids, layout, buffer);
    inject_compute_delay(rank, settings.inject_compute_delay_rank, settings.inject_compute_delay_ms);
    const auto computed = Clock::now();
    backend.allreduce_sum(buffer);
    const auto reduced = Clock::now();
    double moved = update_centroids(buffer, layout, result.centroids);
    const auto updated = Clock::now();
    // Allreduce algorithms may round differently on different ranks; agreeing on the largest
    // move keeps every rank taking the same stop decision (a differing one would deadlock).
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_DOUBLE, MPI_MAX, communicator.handle()),
              "MPI_Allreduce(centroid move)");
    const auto finished = Clock::now();

    const double step_s = seconds_between(start, finished);
    // Both collectives are communication (the move's waits for the slowest rank too).
    const double comm_s = seconds_between(computed, reduced) + seconds_between(updated, finished);
    if (timed) {
      StepTimes& steps = result.training.steps;
      steps.compute_s.push_back(seconds_between(start, computed) + seconds_between(reduced, updated));
      steps.comm_s.push_back(comm_s);
      steps.exposed_s.push_back(comm_s);
      steps.step_s.push_back(step_s);
      result.training.samples_trained += n;
    }
    samples_seen += n;
    result.iterations = iteration;

    // Records describe the centroids the iteration started from (those the totals measure).
    EpochRecord record;
    record.epoch = iteration;
    record.train_loss = buffer[layout.inertia()] / static_cast<double>(n);
    record.test_loss = record.train_loss;
    record.test_accuracy = purity(buffer, layout, n);
    record.train_time_s = step_s;
    record.samples_seen = samples_seen;
    if (rank == 0) result.training.epochs.push_back(record);

    // Not while untimed: a run that converged in its warm-up would record no timed iteration.
    if (moved <= options.tolerance && timed) {
      result.converged = true;
      break;
    }
  }
  check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
  result.training.train_time_s = MPI_Wtime() - loop_start - result.training.flush_time_s;
  return result;
}

}  // namespace harness
