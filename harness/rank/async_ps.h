// The asynchronous parameter server (scheme "async_ps", schemes/registry.h): Downpour's
// servers and workers, bounded by stale synchronous parallel (Ho et al., "More Effective
// Distributed ML via a Stale Synchronous Parallel Parameter Server").
//
// Ranks 0 to S-1 (S = ps_servers) are servers: server k holds the k-th of S contiguous slices of
// the flattened parameters (every parameter's memory in order) and applies plain SGD to it. The
// other W ranks are workers, which never wait for each other. A worker's iteration:
//   1. it has the parameters of every slice, and from server 0 a batch: index i of the epoch's
//      permutation split into batches of b samples (handed out on demand, in the order workers
//      ask, so a faster worker takes more of the epoch; an epoch ends when its batches are used);
//   2. it computes the batch's gradient and pushes each server its slice, with the batch's loss;
//   3. each server applies it and replies with its slice's parameters (server 0 with the next
//      batch, or none: the epoch is used up); the worker waits for every reply.
// A server holds a reply back while the worker is more than max_staleness steps (gradients
// pushed) ahead of the slowest worker, so a gradient is never computed from parameters missing
// more than max_staleness of any worker's steps: its staleness, recorded as it is applied, is its
// step minus the slowest worker's completed steps when the worker last received the parameters.
//
// Updates: at max_staleness 0 a server waits for a step's W gradients, sums them in worker order
// and applies their mean with the step's learning rate, then answers the workers in order: the
// synchronous parameter server, equal to scheme sync on W ranks up to the sum's rounding. Above 0
// it applies each gradient as it arrives, scaled by lr / W, so that W gradients move the model as
// one synchronous step does; the rate is the one of step floor(applied / W) of the epoch.
//
// Epochs: each epoch (and the warm-up steps at the start of the first, as a segment of their own)
// ends with every batch applied and every worker answered; then all ranks meet in a barrier, the
// servers' slices are gathered onto every rank, and rank 0 evaluates, as under sync. The workers'
// steps are counted from 0 again in each segment: they all start it from one model.
//
// Waiting (a server waits for messages most of the time, and Open MPI's blocking calls busy-poll
// a core the workers need): every wait, the servers' for messages (MPI_Iprobe), the workers' for
// replies, the barriers', polls and sleeps between polls (polling_wait.h), reset by each message.
#pragma once

#include <torch/types.h>

#include <optional>
#include <vector>

#include "harness/rank/training_scheme.h"

namespace harness {

class AsyncParameterServer final : public TrainingScheme {
 public:
  // The workload must outlive it. Throws NotSupported for parameters the flat slices cannot hold.
  AsyncParameterServer(Workload& workload, const Communicator& communicator, const PointSettings& settings);

  void broadcast_parameters() override;
  LoopResult train(LoopFlush* flush) override;
  // The servers' staleness counts and busy fractions, the workers' batches (record.h AsyncPsFacts).
  void add_measurements(const LoopResult& result, TrainMeasurements& measurements) override;

  // The flattened parameters' slice [begin, end) that server `server` of `servers` holds, of
  // `count` floats: contiguous, in order, their sizes differing by at most one.
  struct Slice {
    int64_t begin = 0;
    int64_t end = 0;
  };
  static Slice slice_of(int64_t count, int server, int servers);

 private:
  Workload& workload_;
  Communicator communicator_;
  PointSettings settings_;
  int servers_;
  int workers_;
  int64_t worker_index_;  // -1 on a server
  std::optional<int64_t> max_staleness_;  // nullopt: unbounded
  std::vector<torch::Tensor> parameters_;
  int64_t parameter_count_ = 0;

  struct Run;
  struct Segment;
  class Server;
  class Worker;
  // The parameters in their memory order, one after the other, into and from `flat`.
  void store_parameters(std::vector<float>& flat) const;
  void load_parameters(const std::vector<float>& flat);
  // Every rank's parameters become the servers' slices (collective; `slice`: this server's,
  // empty on a worker).
  void gather_parameters(std::vector<float>& flat, const std::vector<float>& slice);
  void record_epoch(int epoch, double epoch_time, Run& run);
  // Truncates (pads, on servers) this rank's timed steps to the fewest any worker took, so that
  // every rank gathers as many (collective).
  StepTimes aligned_steps(const StepTimes& steps) const;
};

}  // namespace harness
