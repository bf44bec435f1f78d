// Waiting without taking a core: Open MPI's blocking calls busy-poll, which costs the ranks that
// compute a core wherever ranks outnumber cores (a parameter server waiting for messages most of
// the time, a worker waiting for its answer). These waits poll with MPI_Test and sleep between
// polls, from 10 us doubling to 250 us, so that a wait ends at most about 250 us after its
// request completes and an idle rank wakes 4000 times a second for a few microseconds.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "backends/communicator.h"

namespace harness {

// Sleeps between polls: 10 us doubling to 250 us, from the first poll that finds nothing; reset()
// when one finds something.
class PollBackoff {
 public:
  void reset() { sleep_ns_ = kFirstNs; }
  void sleep();

 private:
  static constexpr long kFirstNs = 10'000;
  static constexpr long kLongestNs = 250'000;
  long sleep_ns_ = kFirstNs;
};

// Lets this thread's sleeps end close to when they ask: Linux lets a sleep overrun by the thread's
// timer slack, 50 us by default, five times the first sleep between polls; this sets it to 1 us.
void sleep_precisely();

// Until every request of requests[0, count) has completed (each is then MPI_REQUEST_NULL).
void wait_all_polling(MPI_Request* requests, std::size_t count);
inline void wait_polling(MPI_Request& request) { wait_all_polling(&request, 1); }
// MPI_Ibarrier, waited for by polling; marked as the harness's own collective in the rank's
// progress slot.
void barrier_polling(const Communicator& communicator);

}  // namespace harness
