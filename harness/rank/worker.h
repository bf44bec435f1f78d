// The rank program: `harness worker --settings JSON --output FILE`, started by a launcher under
// mpirun. For kind "train" every rank builds the workload and backend named in the settings and
// trains; for kind "comm" it runs the communication benchmark (comm_benchmark.h). Rank 0 writes
// the measurements (JSON, atomically) to FILE:
//   { "schema_version", "kind", "world_size", "threads_per_rank", "allocator", "hosts",
//     "mpi_library", "torch_version",
//     // kind "train":
//     "parameters", "train_samples", "test_samples", "training_ranks", "per_rank_batch",
//     "global_batch", "final_lr",
//     "steps_per_epoch", "samples_trained", "train_time_s", "buckets",
//     "steps": { "step_s": [...], "compute_s": [...], "comm_s": [...], "exposed_comm_s": [...],
//                "wait_s": [...], "imbalance_s": [...] },
//              // per step, the times of the rank whose step took longest, the part of that
//              // rank's exposed time spent waiting for the slowest training rank's compute, and
//              // the slowest training rank's compute minus the mean training rank's
//     "epochs": [ { "epoch", "train_loss", "test_loss", "test_accuracy", "train_time_s",
//                   "samples_seen" } ],
//     // kind "comm":
//     "sizes": [ { "bytes", "time_us_median", "time_us_min", "time_us_max", "algbw_gbps",
//                  "busbw_gbps", "wrong" } ] }
// On any error a rank prints one line to stderr and calls MPI_Abort, so no rank is left waiting.
#pragma once

namespace harness {

// Runs the worker with the arguments after "worker"; returns the process exit status.
int worker_main(int argc, char** argv);

}  // namespace harness
