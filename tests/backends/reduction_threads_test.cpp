// How ReductionThreads cuts a range among a rank's threads, and that every piece runs exactly once
// on a thread of its own, call after call. The sums of shm and hier with several threads are
// tested under mpirun (shared_memory_allreduce_test.cpp, hierarchical_allreduce_test.cpp).
#include "backends/reduction_threads.h"
#include "harness/common/errors.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace harness {
namespace {

constexpr std::size_t kMin = ReductionThreads::kMinFloatsPerThread;
constexpr std::size_t kAlign = ReductionThreads::kAlignFloats;

// The pieces cover [begin, end) in order, without gaps or overlaps; inner boundaries on a line.
void expect_exact_cover(const std::vector<std::pair<std::size_t, std::size_t>>& pieces, std::size_t begin,
                        std::size_t end) {
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces.front().first, begin);
  EXPECT_EQ(pieces.back().second, end);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_LE(pieces[i].first, pieces[i].second);
    if (i > 0) {
      EXPECT_EQ(pieces[i].first, pieces[i - 1].second);
      EXPECT_EQ(pieces[i].first % kAlign, 0U) << "boundary " << i;
    }
  }
}

TEST(ReductionThreads, ShortRangesStayInOnePieceLongOnesSplitOnCacheLines) {
  EXPECT_EQ(ReductionThreads::parts(0, 0, 4).size(), 1U);  // an empty range is still one call
  EXPECT_EQ(ReductionThreads::parts(5, 5 + 2 * kMin - 1, 4).size(), 1U) << "each part needs kMin floats";
  EXPECT_EQ(ReductionThreads::parts(5, 5 + 2 * kMin, 4).size(), 2U);
  EXPECT_EQ(ReductionThreads::parts(0, 100 * kMin, 4).size(), 4U) << "no more parts than threads";
  EXPECT_EQ(ReductionThreads::parts(0, 100 * kMin, 1).size(), 1U);
  for (const std::size_t begin : {std::size_t{0}, std::size_t{3}, std::size_t{1000003}}) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, kMin, 3 * kMin + 5, std::size_t{1000003}}) {
      for (const int threads : {1, 2, 3, 8}) {
        SCOPED_TRACE(testing::Message() << begin << " + " << count << ", " << threads << " threads");
        expect_exact_cover(ReductionThreads::parts(begin, begin + count, threads), begin, begin + count);
      }
    }
  }
}

TEST(ReductionThreads, EveryPieceRunsOnceOnAThreadOfItsOwnCallAfterCall) {
  for (const int threads : {1, 2, 3, 4}) {
    ReductionThreads pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (const std::size_t count : {std::size_t{0}, std::size_t{17}, 4 * kMin + 33, std::size_t{1000003}}) {
      for (int call = 0; call < 3; ++call) {  // the helpers are reused
        SCOPED_TRACE(testing::Message() << threads << " threads, " << count << " floats, call " << call);
        std::vector<int> visits(count + 7, 0);
        std::mutex mutex;
        std::set<std::thread::id> ran_on;
        std::size_t pieces = 0;
        pool.for_each_part(7, 7 + count, [&](std::size_t begin, std::size_t end) {
          for (std::size_t i = begin; i < end; ++i) ++visits[i];
          const std::scoped_lock lock(mutex);
          ran_on.insert(std::this_thread::get_id());
          ++pieces;
        });
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < visits.size(); ++i) wrong += visits[i] == (i >= 7 ? 1 : 0) ? 0 : 1;
        EXPECT_EQ(wrong, 0U);
        EXPECT_EQ(pieces, ReductionThreads::parts(7, 7 + count, threads).size());
        EXPECT_EQ(ran_on.size(), pieces);
        EXPECT_TRUE(ran_on.contains(std::this_thread::get_id())) << "the caller does a part itself";
      }
    }
  }
}

// Staging's levers by size (staging_levers.h) sum small buffers on fewer threads than a rank
// started: a range goes to at most use()'s count, every element still once; all of them again
// when told.
TEST(ReductionThreads, UseSplitsOverAtMostThatManyThreads) {
  ReductionThreads pool(4);
  EXPECT_EQ(pool.in_use(), 4) << "all of them until told";
  const std::size_t count = 100 * kMin;
  for (const int threads : {1, 2, 4, 9, 0}) {
    pool.use(threads);
    const int expected = threads < 1 ? 1 : threads > 4 ? 4 : threads;
    EXPECT_EQ(pool.in_use(), expected);
    std::vector<int> visits(count, 0);
    std::mutex mutex;
    std::set<std::thread::id> ran_on;
    pool.for_each_part(0, count, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) ++visits[i];
      const std::scoped_lock lock(mutex);
      ran_on.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ran_on.size(), static_cast<std::size_t>(expected)) << "use(" << threads << ")";
    EXPECT_EQ(std::count(visits.begin(), visits.end(), 1), static_cast<std::ptrdiff_t>(count));
  }
}

// Under a limit on processes that lets one helper start and refuses the next, the constructor
// throws, with the helper it started stopped (before, it waited for that helper forever, and the
// rank with it). In a child process: the limit must not reach the test binary, and a hang there is
// ended by its alarm and seen here as a signal.
TEST(ReductionThreads, AThreadTheSystemRefusesIsAnErrorNotAHang) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);
    // Root is exempt from the limit: run as a user id nobody else uses, whose only process is this.
    if (geteuid() == 0 && (setresgid(54321, 54321, 54321) != 0 || setresuid(54321, 54321, 54321) != 0)) _exit(10);
    const rlimit two{2, 2};
    if (setrlimit(RLIMIT_NPROC, &two) != 0) _exit(11);
    try {
      const ReductionThreads threads(4);
      _exit(12);  // every thread started: the limit did not hold
    } catch (const Error& error) {
      _exit(std::string(error.what()).find("could not start reduction thread") == 0 ? 0 : 13);
    } catch (...) {
      _exit(14);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "the child hung (alarm) or crashed: signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10/11: could not set up the limit; 12: no thread refused; 13/14: another error";
}

}  // namespace
}  // namespace harness
