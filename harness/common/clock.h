// The one clock the harness times with: steady (never jumps with the wall clock), and not MPI's,
// so that the training thread can time steps while a communication thread is inside MPI
// (MPI_THREAD_SERIALIZED allows no MPI call, MPI_Wtime included, from a second thread then).
#pragma once

#include <chrono>

namespace harness {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

inline double seconds_since(Clock::time_point start) { return seconds_between(start, Clock::now()); }

// Seconds since the Unix epoch on the wall clock: comparable between processes (the harness and
// its ranks), which a steady clock is not.
inline double wall_clock_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace harness
