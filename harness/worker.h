// The rank program: `harness worker --settings JSON --output FILE`, started by a launcher under
// mpirun. Every rank builds the workload and backend named in the settings and trains; rank 0
// writes the measurements (JSON, atomically) to FILE:
//   { "schema_version", "world_size", "threads_per_rank", "hosts", "mpi_library",
//     "torch_version", "parameters", "train_samples", "test_samples", "global_batch",
//     "steps_per_epoch", "samples_trained", "train_time_s",
//     "steps": { "step_s": [...], "compute_s": [...], "comm_s": [...] },  // slowest rank per step
//     "epochs": [ { "epoch", "train_loss", "test_loss", "test_accuracy", "train_time_s",
//                   "samples_seen" } ] }
// On any error a rank prints one line to stderr and calls MPI_Abort, so no rank is left waiting.
#pragma once

namespace harness {

// Runs the worker with the arguments after "worker"; returns the process exit status.
int worker_main(int argc, char** argv);

}  // namespace harness
