#include "backends/reduction_threads.h"

#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {

ReductionThreads::ReductionThreads(int threads) : active_(std::max(1, threads)) {
  const int helpers = std::max(1, threads) - 1;
  helpers_.reserve(static_cast<std::size_t>(helpers));
  for (int i = 0; i < helpers; ++i) {
    try {
      helpers_.emplace_back([this, i] { helper_loop(static_cast<std::size_t>(i)); });
    } catch (const std::system_error& error) {
      // A process or thread limit (ulimit -u, a cgroup's pids.max): the helpers already started
      // must stop before they are joined, or this rank would wait for them forever while the
      // others wait for it.
      stop_helpers();
      throw Error(fmt::format("could not start reduction thread {} of {} ({}); lower shm_reduce_threads or raise the "
                              "limit on processes",
                              i + 2, helpers + 1, error.what()));
    }
  }
}

ReductionThreads::~ReductionThreads() { stop_helpers(); }

void ReductionThreads::stop_helpers() noexcept {
  if (helpers_.empty()) return;
  stopping_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  helpers_.clear();  // joins
}

std::vector<std::pair<std::size_t, std::size_t>> ReductionThreads::parts(std::size_t begin, std::size_t end,
                                                                         int threads) {
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  cut(begin, end, threads, pieces);
  return pieces;
}

void ReductionThreads::cut(std::size_t begin, std::size_t end, int threads,
                           std::vector<std::pair<std::size_t, std::size_t>>& pieces) {
  const std::size_t count = end > begin ? end - begin : 0;
  const std::size_t most = std::max<std::size_t>(1, count / kMinFloatsPerThread);
  const std::size_t parts = std::min<std::size_t>(most, static_cast<std::size_t>(std::max(1, threads)));
  pieces.clear();
  std::size_t from = begin;
  for (std::size_t piece = 1; piece <= parts; ++piece) {
    std::size_t to = end;
    // On a cache line of the segments (page-aligned), whatever `begin`.
    if (piece < parts) to = (begin + count * piece / parts) / kAlignFloats * kAlignFloats;
    pieces.emplace_back(from, std::max(from, to));
    from = std::max(from, to);
  }
}

void ReductionThreads::split(std::size_t begin, std::size_t end,
                             const std::function<void(std::size_t, std::size_t)>& part) {
  cut(begin, end, active_, pieces_);  // reuses pieces_' memory from call to call
  part_ = &part;
  // Helpers beyond the pieces wake, find no piece of theirs and go back to sleep.
  pending_.store(static_cast<int>(helpers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes part_ and pieces_
  generation_.notify_all();
  part(pieces_[0].first, pieces_[0].second);
  for (int left = pending_.load(std::memory_order_acquire); left != 0; left = pending_.load(std::memory_order_acquire)) {
    pending_.wait(left, std::memory_order_acquire);
  }
  part_ = nullptr;
}

void ReductionThreads::helper_loop(std::size_t index) {
  uint64_t seen = 0;
  for (;;) {
    generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_) return;
    if (index + 1 < pieces_.size()) (*part_)(pieces_[index + 1].first, pieces_[index + 1].second);
    // The last helper to finish wakes the caller; the release makes its writes visible there.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace harness
