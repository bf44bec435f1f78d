// The rank program: `harness worker --settings JSON --output FILE`, started by a launcher under
// mpirun. For kind "train" every rank builds the workload and backend named in the settings and
// trains; for kind "comm" it runs the communication benchmark (comm_benchmark.h). Rank 0 writes
// the measurements (results/record.h: Measurements, with where rank 0's time went) atomically to
// FILE, and prints a progress line per epoch to stderr (the point's log). While it trains or
// benchmarks, rank 0 also writes the measurements so far to FILE from time to time (complete:
// false; partial_flush.h), which the final write replaces.
// On any error a rank prints one line to stderr and calls MPI_Abort, so no rank is left waiting.
// This is harness-worker's, with LibTorch; comm points of backends but gloo run in
// harness-comm-worker, without it (worker_core.h holds what the two share).
#pragma once

namespace harness {

// Runs the worker with the arguments after "worker"; returns the process exit status.
int worker_main(int argc, char** argv);

}  // namespace harness
