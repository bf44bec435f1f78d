// Pipeline parallelism (scheme "pipeline", schemes/registry.h): the workload's network, a chain of
// layers (workload.h's LayerChain), cut into p consecutive stages, each on its own rank; every
// replica's batch is split into m micro-batches that flow forward through the stages and whose
// gradients flow back, in the order of the point's schedule (pipeline_schedule.h: gpipe or 1f1b).
//
// Ranks: p x d. Rank r runs stage r / d as replica r % d: a stage's replicas are neighbouring ranks
// (one node, where the launcher places ranks in blocks), and replica j of every stage forms one
// pipeline, which takes the same samples each step as rank j of `sync` on d ranks would. After its
// micro-batches a stage's replicas average their stage's gradients with the point's backend over a
// communicator of their own (GradientBuckets, as sync does), and every rank updates its own stage.
// So the step is synchronous SGD on the global batch: p x 1 stages with m micro-batches equal one
// rank with the whole batch, up to the order of float sums (the loss of each micro-batch is scaled
// by 1/m, so the accumulated gradients are the batch's mean).
//
// Transfers: activations go forward and their gradients back with MPI_Isend/MPI_Irecv between
// neighbouring stages of one pipeline (tags: micro-batch, direction), on a duplicate of the world
// communicator, from and to host memory (stages on GPUs stage them: stage_link.h). The receive of the next micro-batch's activations is posted before the current
// one's forward, and the receive of a micro-batch's output gradient as its output is sent, so
// transfers proceed while the stage computes; sends are waited for only before their tensor is
// freed. Every wait polls (polling_wait.h), so an idle stage leaves its core to the busy ones
// where ranks share cores. Tensor shapes and memory layouts at the cuts come from one forward pass
// of a micro-batch on every rank before training.
//
// Stage boundaries: the point's stage_boundaries, or "balanced": before training, rank 0 times
// each layer's forward and backward pass on one micro-batch (the best of three, after one warm-up)
// and cuts the chain where the largest stage sum is least (balanced_boundaries).
//
// GPUs (device "cuda"): each stage computes on its rank's GPU (ranks may share one); a pass's time
// includes waiting for its kernels, and memory is the CUDA caching allocator's (stage_link.h).
//
// Evaluation: every rank builds the whole model; after each epoch the first replica of every stage
// sends its stage's parameters and buffers to rank 0, which evaluates the whole network.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "harness/rank/gradient_buckets.h"
#include "harness/rank/stage_link.h"
#include "schemes/pipeline_schedule.h"
#include "harness/rank/training_scheme.h"

namespace harness {

class PipelineScheme final : public TrainingScheme {
 public:
  // The workload must outlive it and have a layer chain. Collective over `communicator` (it splits
  // it, measures layers for balanced boundaries and makes the replicas' backend with `make_backend`).
  PipelineScheme(Workload& workload, const Communicator& communicator, const PointSettings& settings,
                 const BackendMaker& make_backend);
  ~PipelineScheme() override;

  void broadcast_parameters() override;
  LoopResult train(LoopFlush* flush) override;
  // Every stage's times, micro-batches held and peak memory (record.h's PipelineFacts).
  void add_measurements(const LoopResult& result, TrainMeasurements& measurements) override;
  std::size_t bucket_count() const override { return buckets_ ? buckets_->bucket_count() : 0; }
  void set_timeline(Timeline* timeline) override { timeline_ = timeline; }

  int stage() const { return stage_; }
  // The first layer of stages 1 to p-1, as this rank uses them.
  const std::vector<int>& boundaries() const { return boundaries_; }

 private:
  struct Run;
  struct InFlight;

  void measure_and_cut();
  void learn_cut_layouts();
  torch::Tensor run_layers(torch::Tensor x);
  void train_epoch(int epoch, Run& run);
  void train_step(int epoch, int64_t step, bool timed, Run& run);
  void forward(int micro_batch, std::span<const int64_t> positions, Run& run, InFlight& held);
  void backward(int micro_batch, Run& run, InFlight& held);
  void wait_for(MPI_Request& request, double& waited_s, std::string_view what, int micro_batch);
  void gather_model_on_rank_zero();
  std::vector<torch::Tensor> stage_tensors(int stage);

  Workload& workload_;
  LayerChain& chain_;
  Communicator communicator_;
  PointSettings settings_;
  int stages_;
  int replicas_;
  int stage_;
  int replica_;
  int micro_batches_;
  std::vector<PipelineOp> ops_;
  std::vector<int> boundaries_;
  bool balanced_ = false;
  std::vector<double> layer_times_s_;
  int first_layer_ = 0;
  int end_layer_ = 0;
  OwnedComm transfers_;  // point-to-point between stages (a duplicate of the world)
  OwnedComm replicas_comm_;
  std::unique_ptr<Communicator> replica_group_;
  std::unique_ptr<GradientSync> backend_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::vector<torch::Tensor> parameters_;  // this stage's
  torch::Device device_;                   // where it computes: its parameters' device
  StageMemory memory_;
  StageLink input_link_;   // what this stage receives (stages after the first)
  StageLink output_link_;  // what it sends (stages before the last)
  Timeline* timeline_ = nullptr;
};

}  // namespace harness
