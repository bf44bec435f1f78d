// What both rank programs share: harness-worker (worker.h: training, K-means and every comm point)
// and harness-comm-worker (comm_worker_program.cpp: comm points of every backend but gloo, without
// LibTorch, whose start-up took 0.7 s of a 2-rank comm point's 1.2 s). The arguments, where
// rank 0's time goes (PhaseClock), rank 0's output file, the facts of the run that every record
// holds, and the communication benchmark. None of it needs LibTorch.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backends/communicator.h"
#include "backends/gradient_sync.h"
#include "harness/common/json.h"
#include "harness/common/rank_progress.h"
#include "harness/rank/timeline.h"
#include "harness/results/record.h"
#include "harness/study/settings.h"

namespace harness {

// Where rank 0's time goes, phase after phase: every second between started_at and the last lap
// lands in exactly one phase.
class PhaseClock {
 public:
  explicit PhaseClock(double started_at) : last_(started_at) { phases_.started_at = started_at; }
  // The time since the previous lap, added to `phase`.
  double lap(double RankPhases::*phase);
  // A training loop's lap: `outside_s` of it (evaluations, partial flushes) is eval_s. Flushing
  // is bookkeeping rank 0 does between steps as evaluating is, and eval_s is the one phase for a
  // loop's time that is not training: train_s stays the timed loop's, and the phases still add up.
  void lap_loop(double outside_s);
  // The phases as if the running loop's lap ended now (a partial write's), without taking it.
  RankPhases so_far(double outside_s) const;
  // The phases up to the last lap; gathering and writing the measurements come after it (the
  // record's finish_s).
  RankPhases finish();

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
  void write_partial(TrainMeasurements train, double outside_s) const;
  void write_partial(CommMeasurements comm, double outside_s) const;
  // Rank 0, at the end: `results` holds the kind's measurements.
  void write_final(Measurements results, RankPhases phases) const;

 private:
  void write(Measurements measurements, const RankPhases& phases, bool complete) const;

  std::string path_;
  const PhaseClock& clock_;
  Measurements context_;
};

// What a rank program has for the point it runs, once the run's facts are gathered.
struct PointContext {
  const PointSettings& settings;
  const Communicator& communicator;
  int cuda_device;  // kNoCudaDevice (device_staging.h) on the host
  int threads;      // per rank, from HARNESS_THREADS_PER_RANK
  PhaseClock& clock;
  OutputFile& output;
  Timeline* timeline;  // null: no trace asked for
  RankProgressWriter& progress;
};

// Runs the point on this rank; the measurements of its kind (train or comm), complete on rank 0.
using PointRunner = Measurements (*)(const PointContext& point);
// Sets up the rank program's compute threads (`threads` per rank) before anything else uses them:
// LibTorch's in harness-worker; null where there are none (harness-comm-worker).
using ThreadSetup = void (*)(int threads);

// The point's backend, each call marked in the rank's progress slot (collective).
std::unique_ptr<GradientSync> make_marked_backend(const PointSettings& settings, const Communicator& communicator,
                                                  RankProgressWriter& progress);

// Measurements of a communication benchmark point (kind "comm"), the same on every rank.
CommMeasurements run_comm_point(const PointContext& point);

// A rank program's main, after its "worker" argument: MPI, the crash report, the arguments
// (--settings JSON --output FILE [--timeline FILE]), `setup_threads`, the run's facts, then
// `run_point`, and rank 0's final write. On any error the rank prints one line and calls
// MPI_Abort, so no rank is left waiting. Returns the process exit status.
int rank_program_main(int argc, char** argv, ThreadSetup setup_threads, PointRunner run_point);

}  // namespace harness
