#include "harness/rank/worker.h"

#include <ATen/Parallel.h>

#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "harness/common/file_digest.h"
#include "harness/rank/partial_flush.h"
#include "harness/rank/step_records.h"
#include "harness/rank/training_scheme.h"
#include "harness/rank/worker_core.h"
#include "workloads/factories.h"
#include "workloads/kmeans_driver.h"
#include "workloads/registry.h"
#include "workloads/torchscript.h"
#include "workloads/workload.h"

namespace harness {
namespace {

std::vector<EpochMeasurement> epoch_measurements(const std::vector<EpochRecord>& records) {
  std::vector<EpochMeasurement> epochs;
  for (const auto& epoch : records) {
    epochs.push_back({epoch.epoch, epoch.train_loss, epoch.test_loss, epoch.test_accuracy,
                      epoch.train_time_s, epoch.eval_time_s, epoch.samples_seen});
  }
  return epochs;
}

// `facts` (what the point knows before training) with what a loop measured: its results so far
// or all of them, the steps of every rank gathered from them, and when it reached `target`.
TrainMeasurements with_loop(TrainMeasurements facts, const LoopResult& loop, StepSeries steps,
                            const std::optional<TrainingTarget>& target) {
  facts.steps = std::move(steps);
  facts.steps_per_epoch = loop.steps_per_epoch;
  facts.samples_trained = static_cast<double>(loop.samples_trained);
  facts.train_time_s = loop.train_time_s;
  facts.epochs = epoch_measurements(loop.epochs);
  facts.loss_curve.clear();
  for (const auto& value : loop.loss_curve) facts.loss_curve.push_back({value.samples_seen, value.train_loss});
  facts.time_to_target = time_to_target(facts.epochs, facts.steps_per_epoch, target);
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
  // The synchronous schemes reduce through the point's backend; async_ps exchanges itself.
  std::unique_ptr<GradientSync> backend;
  if (scheme_uses_backend(settings)) {
    backend = make_marked_backend(settings, communicator, progress);
    output.context().exchange_path = exchange_path(*backend, cuda_device != kNoCudaDevice);
    output.context().staging_levers =
        staging_lever_steps(*backend, cuda_device != kNoCudaDevice, staging_chunk_floats(settings));
  }
  // A scheme's own groups of ranks (pipeline's replicas of a stage) reduce with a backend of the
  // point's kind over the group: its options say the group's size.
  const BackendMaker make_group_backend = [&](const Communicator& group) {
    PointSettings of_group = settings;
    of_group.ranks = group.size();
    of_group.ranks_per_node = 0;
    auto made = make_marked_backend(of_group, group, progress);
    output.context().exchange_path = exchange_path(*made, cuda_device != kNoCudaDevice);
    return made;
  };
  const auto scheme = make_training_scheme(*workload, backend.get(), communicator, settings, make_group_backend);
  if (timeline != nullptr) scheme->set_timeline(timeline);
  scheme->broadcast_parameters();
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
  sgd.buckets = static_cast<int64_t>(scheme->bucket_count());
  facts.sgd = sgd;
  if (settings.workload == "torchscript" && communicator.rank() == 0) {
    // The file this rank loaded, hashed after loading it: the record names exactly what trained.
    const std::filesystem::path file = torchscript_model_file(settings);
    facts.model_file = ModelFileFacts{file.string(), sha256_of_file(file),
                                      static_cast<int64_t>(std::filesystem::file_size(file))};
  }

  const auto write_so_far = [&](const LoopResult& so_far, const StepSeries& steps) {
    output.write_partial(with_loop(facts, so_far, steps, settings.target), so_far.eval_time_s + so_far.flush_time_s);
  };
  PartialFlush flush(communicator, training, write_so_far);
  const LoopResult result = scheme->train(&flush);
  clock.lap_loop(result.eval_time_s + result.flush_time_s);
  TrainMeasurements measurements =
      with_loop(facts, result, gather_step_series(result.steps, training, communicator), settings.target);
  scheme->add_measurements(result, measurements);
  return measurements;
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
    TrainMeasurements partial = with_loop(facts, so_far, steps, settings.target);
    // The centroids are known at the end; the iterations so far are rank 0's epoch records.
    partial.kmeans->iterations = static_cast<int>(so_far.epochs.size());
    output.write_partial(std::move(partial), so_far.eval_time_s + so_far.flush_time_s);
  };
  PartialFlush flush(communicator, training, write_so_far);
  const KMeansResult result =
      run_distributed_kmeans(data, *backend, communicator, settings, &flush);
  clock.lap_loop(result.training.eval_time_s + result.training.flush_time_s);

  TrainMeasurements measurements = with_loop(
      facts, result.training, gather_step_series(result.training.steps, training, communicator), settings.target);
  measurements.kmeans->iterations = result.iterations;
  measurements.kmeans->converged = result.converged;
  measurements.kmeans->centroids = result.centroids;
  return measurements;
}

// LibTorch's threads, for every kind of point (gloo's comm points too). Inter-op threads are never
// used by the loops; fix them before any parallel work starts.
void setup_torch_threads(int threads) {
  at::set_num_interop_threads(1);
  at::set_num_threads(threads);
}

// Every kind of point: training, K-means, and comm points as harness-comm-worker runs them.
Measurements run_point(const PointContext& point) {
  Measurements results;
  if (point.settings.kind == Kind::kComm) {
    results.comm = run_comm_point(point);
    return results;
  }
  if (find_workload(point.settings.workload).algorithm == Algorithm::kLloydKMeans) {
    results.train = cluster(point.settings, point.communicator, point.clock, point.output,
                            point.progress);  // validation refuses a timeline
  } else {
    results.train = train(point.settings, point.communicator, point.cuda_device, point.clock, point.output,
                          point.timeline, point.progress);
  }
  return results;
}

}  // namespace

int worker_main(int argc, char** argv) { return rank_program_main(argc, argv, setup_torch_threads, run_point); }

}  // namespace harness
