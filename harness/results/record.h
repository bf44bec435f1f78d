// The record of one point: what `harness run` writes to points/<id>.json and what every later
// stage (summaries, plots, check) reads; and the measurements the rank program writes, which the
// record holds. One definition with to_json / from_json, so that no field is spelled in two
// places. Every change to the format raises kRecordSchemaVersion; the reader converts records of
// older versions and refuses newer ones, saying which version it reads.
//
// Versions:
//   1  harness 0.1.0 (up to commit 76e39da).
//   2  adds `key` (the PointKey hash; version 1's `hash` also hashed the harness version),
//      `launch.scheduler`, `timing` (where the point's wall time went), the measurements'
//      `phases` and each epoch's `eval_time_s`; K-means' measurements lose the SGD-only fields.
//   3  adds the statuses beyond "ok" and "failed" (a cluster's: "timeout", "cancelled", "oom",
//      "node_failure", "preempted", "lost"), `partial_measurements` (what a point that did not
//      finish had written), the measurements' `complete` and `launch.job_id`.
//   4  adds a training point's `loss_curve` (the mean training loss every loss_every steps) and
//      the settings `loss_every` and `timeline`.
//   5  adds the comm benchmark's memory probes per size (`reduce_probe_us`, `copy_probe_us`).
//      Only measurements are added: timings of versions 4 and 5 mean the same
//      (kTimingsComparableSince).
//   6  adds the measurements' `nodes` (each host with its ranks), and per comm size the probes on
//      one core (`reduce_probe_one_us`, `copy_probe_one_us`) and the point-to-point bandwidth
//      inside a node and between nodes (`intra_node_gbps`, `inter_node_gbps`). Measurements
//      only, as version 5.
//   7  adds the measurements' `machine` (where rank 0 ran: host, CPU model, logical CPUs,
//      memory; harness check tells runs of different machines apart by it), and the record's
//      `build` (the harness build whose rank program ran the point, when the experiment names
//      builds) with the setting `build`. Timings mean what they meant in version 6.
//   8  adds the measurements' `exchange_path` (how the buffers reached the backend: "host memory",
//      "pinned host staging", "device pointers", "nccl", or "none (one rank)": a one-rank point
//      exchanges nothing) and, on device "cuda", `gpus` (each rank's GPU, the driver and runtime
//      versions, MPS), and `oversubscribed` (where ranks × threads outnumbered the cores they
//      could use). Measurements only: timings mean what they meant in version 7.
//      Also adds the steps' `slowest_rank` and `slowest_lead_s` (per step, the training rank
//      whose compute took longest and its lead over the other training ranks) and
//      `rank_compute` (every rank's compute time at a bounded sample of the steps), and the
//      settings `inject_compute_delay_ms` and `inject_compute_delay_rank`; absent before.
//   9  backend "ring" hands buffers whose chunk (bytes / ranks) is below the new setting
//      `ring_allreduce_below_chunk_bytes` (default 512 KiB) to MPI_Allreduce; records before 9 ran
//      the ring at every size (the cost model reads them so: kRingCrossoverSince).
//      Also adds, per comm size on device "cuda", the GPU's copy probes
//      (`device_to_host_probe_us`, `host_to_device_probe_us`, `device_copy_probe_us`); absent
//      before and on device "cpu".
//  10  adds the setting `staging_chunk_bytes` (the chunk of pipelined GPU staging); records before
//      10 staged in chunks of its default, 4194304 bytes, and read with it. Timings mean what they
//      meant in version 9.
//  11  adds the setting `shm_reduce_threads` (backends shm and hier: threads per rank that sum its
//      slice, and that the comm benchmark's memory probes run); records before 11 summed with
//      one, and read with it. Timings mean what they meant in version 10.
//  12  adds the setting `shm_copy_engine_gathers` (backend shm on device cuda: the GPU's copy
//      engine gathers the sums from their owners' segments); records before 12 wrote every sum
//      into every segment, and read with false. Timings mean what they meant in version 11.
//  13  a training step's times (`steps`: step, compute, comm, exposed, wait) are the means over
//      the training ranks, where before 13 they were the times of the training rank whose step
//      took longest (which one was chance, and with a straggler its split of the step between
//      compute and waiting went with it); `slowest_lead_s` is the lead over the median of the
//      other training ranks, where before it counted the slowest one too (half the lead with 2
//      ranks). `harness check` compares training records only on one side of 13
//      (kStepMeansSince).
//  14  a named build's rank program is sent only the settings the experiment sets (and those the
//      launch decides), so that it runs every other one at its own default, where before 14 it
//      was sent the running harness's value of every setting it knew; the record's `build` adds
//      `settings`, the values that build ran with; `launch.host` says which node a cluster job ran
//      on. The settings `shm_reduce_threads` and `shm_copy_engine_gathers` take "auto", their new
//      default: staging from a GPU picks both by the staged buffer's size (backends/
//      staging_levers.h), and the measurements' `staging_levers` say what it ran with. Records
//      before 14 ran with the values they name; on device "cpu" their defaults, 1 and false, are
//      what "auto" is there, and they are read as "auto" (their points keep their identity).
//      Timings mean what they meant in version 13.
//  15  adds the settings `scheme` (how the ranks train together, schemes/registry.h) and
//      `sync_every` (scheme local_sgd); records before 15 trained with "sync", and read with it
//      (their points keep their identity). Timings mean what they meant in version 14.
//  16  adds scheme async_ps: the settings `ps_servers` and `max_staleness`, and the training
//      measurements' `async_ps` (staleness of the applied gradients, the servers' busy time); its
//      steps' `wait_s` is the time the staleness bound held a worker back. Adds the setting
//      `target` and the measurements' `time_to_target`. Timings mean what they meant in version 15.
//  17  adds scheme pipeline: the settings `pipeline_stages`, `micro_batches`, `pipeline_schedule`
//      and `stage_boundaries`, and the training measurements' `pipeline` (the stages' layers and
//      per-step times, micro-batches held, peak activation memory). A pipeline rank's steps'
//      `comm_s` and `exposed_s` are its waits for its neighbours and its replicas' averaging.
//      Timings mean what they meant in version 16.
//  18  adds workloads torchscript and gpt (their settings: model_path, input_shape, classes, loss,
//      model_data; n_layer, n_head, d_model, seq_len, vocab) and the training measurements'
//      `model_file` (a torchscript point's model: its path, SHA-256 and size). Timings mean what
//      they meant in version 17.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/staging_levers.h"
#include "harness/common/json.h"
#include "harness/common/machine.h"
#include "harness/study/settings.h"

namespace harness {

inline constexpr int kRecordSchemaVersion = 18;
// Records before this name the staging levers' old defaults (version 14 above).
inline constexpr int kStagingLeversAutoSince = 14;
// Records of this version and later time the same things in the same way: `harness check`
// compares their timings, while a record older than this is compared only with its own version.
inline constexpr int kTimingsComparableSince = 4;
// Training records of this version and later keep the training ranks' mean step times; older
// ones one rank's (version 13 above): their step metrics are not compared across it.
inline constexpr int kStepMeansSince = 13;
// Records of this version and later ran backend "ring"'s crossover to MPI_Allreduce; older ones
// read with its default, but ran the ring at every size.
inline constexpr int kRingCrossoverSince = 9;

// How a point ended. Only "ok" points have measurements that reports use.
enum class PointStatus {
  kOk,
  kFailed,       // a non-zero exit, a signal, no usable output
  kTimeout,      // stopped by its time limit (what it measured so far is kept as partial)
  kCancelled,    // cancelled by someone else (scancel); Ctrl-C of the harness leaves no record
  kOutOfMemory,
  kNodeFailure,  // a node of its job failed: may succeed when run again unchanged
  kPreempted,    // its job was preempted: may succeed when run again unchanged
  kLost,         // its job vanished from the scheduler without saying how it ended
};

// "ok", "failed", "timeout", "cancelled", "oom", "node_failure", "preempted", "lost".
std::string_view status_name(PointStatus status);
// The status of a record's "status" text; nothing for an unknown one.
std::optional<PointStatus> status_from_name(std::string_view name);
// Node failures and preemptions: nothing about the point itself is wrong.
bool is_retryable(PointStatus status);
// Those, and a cancellation by someone else or a job that vanished: the scheduler ended the point,
// and its record says nothing of the point's own code (`harness check` counts such a repeat as
// missing, not as failing).
bool ended_by_the_scheduler(PointStatus status);

// Every rank's compute time at a sample of the timed steps, bounded whatever the run's length:
// the steps whose index (counted from 0) is a multiple of `stride`, the smallest power of two
// that keeps at most rank_sample_limit(ranks) of them (64 steps per rank, fewer above 256 ranks:
// at most max(16384, 8 × ranks) values in all). Once a run has that many steps, at least half as
// many are kept, spread evenly over it.
inline constexpr std::size_t kRankSampleSteps = 64;
inline constexpr std::size_t kRankSampleValues = 16384;
inline constexpr std::size_t kRankSampleMinSteps = 8;
std::size_t rank_sample_limit(std::size_t ranks);

struct RankComputeSample {
  int64_t stride = 1;
  std::vector<int64_t> steps;                  // the sampled timed steps, increasing
  std::vector<std::vector<double>> compute_s;  // per sampled step, every rank's (by rank)
};
// Doubles `sample`'s stride, dropping the steps that are no multiple of it, until it holds at
// most rank_sample_limit(ranks) steps.
void thin_rank_sample(RankComputeSample& sample);

// Per timed step, the means over the training ranks of their times (seconds; before version 13,
// the times of the training rank whose step took longest).
struct StepSeries {
  std::vector<double> step_s;
  std::vector<double> compute_s;       // forward, backward and update
  std::vector<double> comm_s;          // gradient communication
  std::vector<double> exposed_comm_s;  // what a rank waited for communication after backward
  // The part of the exposed time spent waiting for the slowest training rank's compute, and the
  // step's load imbalance (slowest training rank's compute minus the mean's). Absent in version
  // 1 records written before they were measured.
  std::optional<std::vector<double>> wait_s;
  std::optional<std::vector<double>> imbalance_s;
  // Version 8: per step, the training rank whose compute took longest (the lowest on a tie), and
  // its lead: its compute minus the median of the other training ranks' (results/stragglers.h).
  // Absent before.
  std::optional<std::vector<int>> slowest_rank;
  std::optional<std::vector<double>> slowest_lead_s;
  // Version 8: every rank's compute time at a bounded sample of the steps. Absent before.
  std::optional<RankComputeSample> rank_compute;
};

// One epoch of a training point (an iteration of K-means). Losses and accuracy are NaN when the
// run diverged (stored as null: JSON has no NaN).
struct EpochMeasurement {
  int epoch = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double train_time_s = 0;
  std::optional<double> eval_time_s;  // version 2
  int64_t samples_seen = 0;
};

// Data-parallel SGD points: the model and batch facts.
struct SgdFacts {
  int64_t parameters = 0;
  int64_t per_rank_batch = 0;
  int64_t global_batch = 0;
  double final_lr = 0;
  int64_t buckets = 0;
};

// The model file a point loaded (workload torchscript), as rank 0 read it. Version 18.
struct ModelFileFacts {
  std::string path;    // the file loaded (model_path, resolved)
  std::string sha256;  // lower-case hex of its bytes
  int64_t bytes = 0;
};

// K-means points: what the clustering found.
struct KMeansFacts {
  int dimensions = 0;
  int iterations = 0;
  bool converged = false;
  std::vector<float> centroids;
};

// The mean training loss over a window of steps (all ranks' batches); NaN when it diverged.
struct LossValue {
  int64_t samples_seen = 0;  // cumulative, all ranks, at the window's end
  double train_loss = 0;
};

// Scheme async_ps (harness/rank/async_ps.h): how stale the applied gradients were and how busy
// the servers were, over the timed steps. Version 16.
struct AsyncPsFacts {
  int servers = 1;
  // Gradients applied by the servers (each server counts each gradient's slice), by staleness in
  // steps: staleness_counts[s] were s steps stale.
  std::vector<int64_t> staleness_counts;
  // Per server: the share of its serving time spent handling messages rather than waiting.
  std::vector<double> server_busy_fraction;
  // Per worker: the batches it took in the timed steps (work is handed out on demand: a faster
  // worker takes more).
  std::vector<int64_t> worker_batches;
};

// Scheme pipeline (harness/rank/pipeline.h): one stage, its times per timed step (the mean over
// the steps, then over the stage's replicas). Version 17.
struct PipelineStageFacts {
  int first_layer = 0;  // its layers: [first_layer, end_layer) of the workload's chain
  int end_layer = 0;
  double step_s = 0;
  double compute_s = 0;       // the step less the waits below: forward, backward, update
  double forward_s = 0;
  double backward_s = 0;
  double receive_wait_s = 0;  // waiting for activations (from the stage before) and gradients (after)
  double send_wait_s = 0;     // waiting for its own sends to be taken
  double average_s = 0;       // averaging its gradients with its replicas (hybrid)
  int most_held = 0;          // the most micro-batches whose activations it held at once
  // Memory above the step's start (LibTorch's CPU allocations, counted), in the median step and the
  // most over its replicas: the most held after one of its forward passes (the activations kept for
  // backward, received and sent tensors: what the schedule decides) and the allocator's peak during
  // the step (backward's transients too: weight gradients, convolution scratch).
  int64_t peak_activation_bytes = 0;
  int64_t peak_step_bytes = 0;
};

struct PipelineFacts {
  int stages = 1;
  int replicas = 1;
  int micro_batches = 1;
  std::string schedule;             // "gpipe" or "1f1b"
  std::vector<int> boundaries;      // the first layer of stages 1 to stages-1
  bool balanced = false;            // boundaries cut from layer_times_s (else the point's)
  std::vector<std::string> layer_names;
  std::vector<double> layer_times_s;  // forward + backward of each layer on one micro-batch, rank 0
  std::vector<PipelineStageFacts> stage;
};

// (p - 1) / (m + p - 1): a balanced pipeline's idle share with free transfers.
double predicted_pipeline_bubble(const PipelineFacts& pipeline);
// The measured bubble: the share of the stages' time spent idle, 1 - their compute / their steps
// less the replicas' averaging (summed over the stages); the predicted bubble when stages balance
// and transfers are free.
double measured_pipeline_bubble(const PipelineFacts& pipeline);
// The busiest stage's compute over the stages' mean, less 1 (0: balanced).
double pipeline_stage_imbalance(const PipelineFacts& pipeline);

// The staleness below which `fraction` of the counted gradients fall (0.5: the median; the
// smallest s with at least that share at or below it); 0 with none counted.
int64_t staleness_quantile(const std::vector<int64_t>& counts, double fraction);

// When a point with a target (settings' `target`) first reached it: after the first epoch whose
// record reached it, with the training time of the epochs so far (their train_time_s: evaluation
// and the first epoch's warm-up steps excluded) and the steps taken (warm-up included). Version 16.
struct TargetReached {
  bool reached = false;  // false: no epoch reached it (the other fields are 0)
  double time_s = 0;
  int epoch = 0;
  int64_t step = 0;
};

// From a point's epochs; nullopt without a target. A diverged epoch (NaN) reaches nothing.
std::optional<TargetReached> time_to_target(const std::vector<EpochMeasurement>& epochs, int64_t steps_per_epoch,
                                            const std::optional<TrainingTarget>& target);

struct TrainMeasurements {
  int64_t train_samples = 0;
  int64_t test_samples = 0;
  int training_ranks = 0;
  int64_t steps_per_epoch = 0;
  double samples_trained = 0;  // all ranks, timed steps
  double train_time_s = 0;     // barrier to barrier per epoch, evaluation excluded
  StepSeries steps;
  std::vector<EpochMeasurement> epochs;
  std::vector<LossValue> loss_curve;  // version 4, SGD workloads; samples_seen increasing
  std::optional<SgdFacts> sgd;        // the SGD workloads
  std::optional<KMeansFacts> kmeans;  // workload kmeans
  std::optional<AsyncPsFacts> async_ps;  // scheme async_ps (version 16)
  std::optional<PipelineFacts> pipeline;  // scheme pipeline (version 17)
  std::optional<TargetReached> time_to_target;  // a point with a target (version 16)
  std::optional<ModelFileFacts> model_file;     // workload torchscript (version 18)
};

// One message size of a communication benchmark point (comm_benchmark.h).
struct MessageSizeMetrics {
  int64_t bytes = 0;
  double time_us_median = 0;  // of the slowest rank's time per reduction
  double time_us_min = 0;
  double time_us_max = 0;
  double algbw_gbps = 0;      // bytes / median time, 10^9 bytes/s
  double busbw_gbps = 0;      // algbw · 2(p−1)/p
  int64_t wrong = 0;          // elements that differ from MPI_Allreduce's result, all ranks
  // The node's memory at this size, in the conditions of the reductions (every rank at once, the
  // same buffers): the median over comm_iterations of the slowest rank's time for a[i] += b[i]
  // over the buffer, and for copying it. 0 in records before version 5.
  double reduce_probe_us = 0;
  double copy_probe_us = 0;
  // The same probes by rank 0 alone while the other ranks wait: one core's share of the memory
  // bandwidth against all cores' (version 6; 0 before).
  double reduce_probe_one_us = 0;
  double copy_probe_one_us = 0;
  // Point-to-point bandwidth at this size, MPI_Sendrecv between two ranks of rank 0's node and
  // between rank 0 and a rank of another node, the other ranks idle (10^9 bytes/s each way; 0
  // where the layout has no such pair, and before version 6): what the transport gives a backend
  // inside a node and across nodes.
  double intra_node_gbps = 0;
  double inter_node_gbps = 0;
  // On device "cuda", the GPU at this size in the conditions of the reductions (every rank at
  // once: ranks that share a GPU share it here too): the median over comm_iterations of the
  // slowest rank's time for one copy of the buffer, timed on the GPU with CUDA events, from
  // device to pinned host memory, back, and from device to device memory (backends/
  // device_probes.h). What bounds staging, and a backend that reduces in device memory. 0 on
  // device "cpu" and in records before them (version 9).
  double device_to_host_probe_us = 0;
  double host_to_device_probe_us = 0;
  double device_copy_probe_us = 0;
};

struct CommMeasurements {
  std::vector<MessageSizeMetrics> sizes;  // smallest first
};

// Where rank 0's time went inside the rank program, in seconds; wall-clock instants as seconds
// since the Unix epoch (comparable with the harness's own).
struct RankPhases {
  double started_at = 0;   // main() entered, before MPI_Init
  double init_s = 0;       // MPI, threads, the backend, the trainer's buffers and broadcast
  double data_s = 0;       // the workload: reading the data, building the model
  double train_s = 0;      // the timed loop, evaluation excluded (benchmark: the reductions)
  double eval_s = 0;       // held-out evaluation, and the partial writes while the loop runs
  double finished_at = 0;  // before gathering and writing the measurements
};

// One rank's GPU on device "cuda": the CUDA device it used, as CUDA names it.
struct RankGpu {
  int index = 0;            // the CUDA device index (counted after CUDA_VISIBLE_DEVICES)
  std::string name;         // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;   // "0000:2A:00.0": tells GPUs apart across ranks of a host
  int64_t memory_bytes = 0;
  bool mps = false;         // an MPS control daemon runs for the rank's node (its pipe is there)
};

// The GPUs of a device "cuda" point (version 8).
struct GpuFacts {
  std::vector<RankGpu> ranks;   // per rank, in rank order
  std::string driver_version;   // the CUDA version the driver supports, "13.0"
  std::string runtime_version;  // the CUDA runtime the rank program uses, "13.0"
  std::string nccl_version;     // "2.28.9" where the backend is nccl, else empty
};

// Whether ranks share a GPU, and the one-line description: harness/results/gpu_facts.h.

// What rank 0 writes at the end of a point (`harness worker --output FILE`), and from time to time
// while it runs (complete: false).
struct Measurements {
  int schema_version = kRecordSchemaVersion;
  // False while the rank program is still running: it writes what it has measured so far from time
  // to time, so that a point stopped by its time limit keeps its partial step timings.
  bool complete = true;
  Kind kind = Kind::kTrain;
  int world_size = 0;
  int threads_per_rank = 0;
  std::string allocator;
  std::vector<std::string> hosts;  // per rank; the records also list them as `nodes` (node_layout)
  std::string mpi_library;
  std::string torch_version;
  std::optional<MachineFacts> machine;  // version 7 (rank programs of builds before it leave it out)
  // How the buffers reached the backend (version 8; empty before): "host memory", "pinned host
  // staging", "device pointers", the name of a backend that reduces GPU memory itself ("nccl",
  // "cuda_ipc"), or kNoExchangePath ("none (one rank)").
  std::string exchange_path;
  std::optional<GpuFacts> gpus;      // version 8, device "cuda"
  // Version 14, buffers staged from a GPU through the host only: the levers staging ran with, by
  // the staged buffer's size (from each step's from_bytes up to the next's): the threads each
  // rank summed on, and whether the copy engine gathered the sums.
  std::vector<StagingLeverStep> staging_levers;
  // Version 8: the machine where the ranks' threads most outnumbered the cores they could run on
  // (harness/common/machine.h); nothing when none did (or in older records).
  std::optional<Oversubscription> oversubscribed;
  std::optional<RankPhases> phases;  // version 2
  std::optional<TrainMeasurements> train;  // kind train
  std::optional<CommMeasurements> comm;    // kind comm
};

// The nodes of a run in order of their first rank, each with its ranks: what `hosts` says, as
// records list it (`nodes`: [{"host": "nodea", "ranks": [0, 1]}, ...]).
struct NodeRanks {
  std::string host;
  std::vector<int> ranks;
};
std::vector<NodeRanks> node_layout(const std::vector<std::string>& hosts);

struct LaunchInfo {
  std::string scheduler = "local";
  std::string job_id;                // the scheduler's id of the job (SLURM: "1234", "1234_5"); "" locally
  // Version 14: the node the job's script ran on, as the job wrote it (SLURM: its batch host,
  // rank 0's node), so that a failed point, which has no measurements, still says where it ran;
  // "" locally and before 14.
  std::string host;
  std::vector<std::string> command;  // exactly what was run
  int threads_per_rank = 0;
  std::string outcome;               // "exit code 0", "timed out after the 600 s limit", ...
  double wall_time_s = 0;            // from start to end of the job, as the harness saw it
};

// Where a point's wall time went: adds up to launch.wall_time_s (seconds). From the harness's
// clock and rank 0's phases; absent when the point failed before rank 0 wrote them.
struct PointTiming {
  double launch_s = 0;   // the job starting until rank 0's main(): scheduler, mpirun, loading
  double init_s = 0;
  double data_s = 0;
  double train_s = 0;
  double eval_s = 0;      // evaluation and partial writes (RankPhases::eval_s)
  double finish_s = 0;   // gathering and writing the measurements, the ranks and mpirun ending
};

struct Provenance {
  std::string harness_version;
  std::string git_commit;
  std::string host;
  std::vector<std::string> command_line;
  std::string working_directory;
  std::string started_at;   // UTC, 2026-11-22T02:43:27Z
  std::string finished_at;
};

// The harness build whose rank program ran a point (study/builds.h), as it described itself.
struct BuildProvenance {
  std::string name;     // the value of the point's `build` setting
  std::string path;     // absolute
  std::string version;  // its `--version`: "0.3.0"
  std::string commit;   // "31f404a0c2b1"
  // 16 hex digits of FNV-1a over the binary's bytes: tells two builds of one "-dirty" commit
  // apart (and a binary rebuilt at the same path). Empty when the build was not probed.
  std::string fingerprint;
  // Version 14: every setting as that build's rank program ran the point: its own defaults, and
  // over them the settings it was sent (those the experiment sets and those always sent,
  // study/builds.h). The record's `settings` are the running harness's view, which identifies
  // the point; these can differ where the build's defaults differ. Empty when not known (before
  // 14, or a build that was not probed).
  Json settings = Json::object();
};
Json to_json(const BuildProvenance& build);
// Throws Error "<where>: ..." for a malformed one.
BuildProvenance build_provenance_from_json(const Json& json, const std::string& where);

struct PointRecord {
  int schema_version = kRecordSchemaVersion;  // as read (a converted record keeps its own)
  std::string experiment;
  std::string id;
  int index = 0;
  int repeat = 0;
  std::string key;  // PointKey hash
  PointStatus status = PointStatus::kFailed;
  std::string reason;                  // why it is not ok
  std::vector<std::string> log_tail;   // the end of its log, when it failed
  PointSettings settings;
  LaunchInfo launch;
  Provenance provenance;
  std::optional<BuildProvenance> build;  // version 7: present when the point ran a named build
  std::optional<PointTiming> timing;
  std::optional<Measurements> measurements;  // present exactly when ok
  // What a point that is not ok had measured before it stopped (a timeout's steps so far).
  std::optional<Measurements> partial_measurements;

  bool ok() const { return status == PointStatus::kOk; }
};

Json to_json(const Measurements& measurements);
Json to_json(const PointRecord& record);

// Throw Error "<where>: ..." naming what is missing, malformed or too new; a version 1 record is
// converted. A record is complete and valid, or it is refused.
Measurements measurements_from_json(const Json& json, const std::string& where);
PointRecord record_from_json(const Json& json, const std::string& where);

// The timing split of a finished point, from when the harness started the job (seconds since the
// epoch), the job's wall time and rank 0's phases; the parts add up to the wall time.
PointTiming point_timing(double job_started_at, double wall_time_s, const RankPhases& phases);

}  // namespace harness
