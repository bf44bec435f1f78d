// What a rank that crashes prints before it dies: the signal, the faulting address, the
// instruction address and, for a call through a null function pointer (where a backtrace cannot
// unwind: Open MPI's own handler then prints a single libc frame), the caller's return address,
// each as library+offset (addr2line -e LIBRARY OFFSET names the line), then the frames that
// backtrace(3) finds. It replaces Open MPI's handler, so it is installed after MPI_Init.
#pragma once

namespace harness {

// For SIGSEGV, SIGBUS, SIGILL and SIGFPE; the signal's default action (a core, the exit status
// that srun and mpirun report) follows the report.
void install_crash_report(int rank);

}  // namespace harness
