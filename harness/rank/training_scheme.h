// The rank half of a training scheme (schemes/registry.h names them): how this rank trains with
// the others for one training point. The synchronous schemes (sync, local_sgd) are the
// data-parallel trainer, whose ranks all do the same work through the point's backend; async_ps's
// ranks do different work (servers and workers, async_ps.h) over MPI point-to-point. Pipeline
// schemes plug in here too: every scheme trains the workload's model for the point's epochs and
// reports what the rank measured in a LoopResult.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "backends/communicator.h"
#include "backends/gradient_sync.h"
#include "harness/rank/timeline.h"
#include "harness/results/record.h"
#include "harness/study/settings.h"
#include "workloads/loop_result.h"
#include "workloads/workload.h"

namespace harness {

class TrainingScheme {
 public:
  virtual ~TrainingScheme() = default;
  // Collective: every rank starts from rank 0's model.
  virtual void broadcast_parameters() = 0;
  // Collective: trains settings.epochs epochs; rank 0 evaluates after each and gets the epoch
  // records. With a `flush`, offers it the results so far where the scheme can stop all ranks at
  // once (loop_result.h); its time, like evaluation's, is left out of the training time. Every
  // rank's result has as many timed steps as every other's, the ranks that only serve included.
  virtual LoopResult train(LoopFlush* flush) = 0;
  // Collective, after train(): what the scheme measured beyond the steps and epochs, into rank 0's
  // `measurements` (the other ranks' are not kept). Nothing by default.
  virtual void add_measurements(const LoopResult& result, TrainMeasurements& measurements) {
    (void)result;
    (void)measurements;
  }
  // Gradient buckets of the backend's exchange (0: the scheme uses none).
  virtual std::size_t bucket_count() const { return 0; }
  // Traces a sample of the timed steps into `timeline` (validation refuses it where a scheme
  // cannot); it must outlive the scheme's use.
  virtual void set_timeline(Timeline* timeline) { (void)timeline; }
};

// Whether the point's scheme reduces through the point's backend on all its ranks (the synchronous
// ones do; async_ps exchanges point-to-point itself and needs none built; pipeline makes its own,
// for each stage's replicas, with a BackendMaker).
bool scheme_uses_backend(const PointSettings& settings);

// Makes the point's backend on `communicator` (a scheme's group of ranks).
using BackendMaker = std::function<std::unique_ptr<GradientSync>(const Communicator& communicator)>;

// The scheme of settings.scheme for this rank. `backend` (null when !scheme_uses_backend) must
// outlive it, as must the workload; `make_backend` makes a backend for a group of ranks (pipeline's
// replicas). Throws NotSupported for a scheme without a rank half.
std::unique_ptr<TrainingScheme> make_training_scheme(Workload& workload, GradientSync* backend,
                                                     const Communicator& communicator, const PointSettings& settings,
                                                     const BackendMaker& make_backend);

}  // namespace harness
