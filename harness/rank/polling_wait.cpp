#include "harness/rank/polling_wait.h"

#include <sys/prctl.h>

#include <algorithm>
#include <ctime>

#include "harness/common/errors.h"
#include "harness/common/rank_progress.h"

namespace harness {

void PollBackoff::sleep() {
  const timespec pause{0, sleep_ns_};
  nanosleep(&pause, nullptr);
  sleep_ns_ = std::min(2 * sleep_ns_, kLongestNs);
}

void sleep_precisely() { prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); }

void wait_all_polling(MPI_Request* requests, std::size_t count) {
  PollBackoff backoff;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(count), requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (done != 0) return;
    backoff.sleep();
  }
}

void barrier_polling(const Communicator& communicator) {
  const InHarnessCollective marked;
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(communicator.handle(), &request), "MPI_Ibarrier");
  wait_polling(request);
}

}  // namespace harness
