// Runs on every rank under mpirun (1 to 4 ranks): the timeline of a real training loop and of
// the comm benchmark, written by rank 0 as a Chrome trace.
#include "harness/rank/timeline.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <map>
#include <set>

#include "backends/mpi_allreduce.h"
#include "harness/common/files.h"
#include "harness/rank/comm_benchmark.h"
#include "harness/rank/trainer.h"
#include "workloads/factories.h"
#include "workloads/registry.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// A path every rank agrees on (rank 0's process id in it).
std::string shared_path(const std::string& name) {
  int id = static_cast<int>(::getpid());
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return (fs::temp_directory_path() / fmt::format("harness_timeline_{}_{}.json", id, name)).string();
}

PointSettings iris_settings(int epochs, bool overlap) {
  PointSettings settings;
  settings.ranks = world_size();
  settings.batch_size = 4;
  settings.epochs = epochs;
  settings.lr = 0.5;
  settings.bucket_mb = 0.0005;  // several buckets: one reduction event each
  settings.overlap = overlap;
  return settings;
}

// Trains with a timeline and returns the trace rank 0 wrote (null elsewhere).
Json trained_trace(const PointSettings& settings, const std::string& name, int64_t* timed_steps = nullptr) {
  const auto workload = make_workload(settings, kNoCudaDevice);
  MpiAllreduce backend(MPI_COMM_WORLD);
  DataParallelTrainer trainer(*workload, backend, MPI_COMM_WORLD, settings);
  Timeline timeline;
  trainer.set_timeline(&timeline);
  trainer.broadcast_parameters();
  const LoopResult result = trainer.train();
  if (timed_steps != nullptr) *timed_steps = static_cast<int64_t>(result.steps.step_s.size());
  const std::string path = shared_path(name);
  timeline.write(MPI_COMM_WORLD, path, std::vector<std::string>(static_cast<std::size_t>(world_size()), "host"),
                 {{"test", name}});
  if (world_rank() != 0) return nullptr;
  const Json trace = read_json_file(path);
  fs::remove(path);
  return trace;
}

// Complete events on one (pid, tid) track must nest: each one lies inside every open one that it
// starts in (what the viewers draw as a stack).
void expect_nested(std::vector<const Json*> events) {
  std::sort(events.begin(), events.end(), [](const Json* a, const Json* b) {
    const double a_ts = (*a)["ts"].get<double>(), b_ts = (*b)["ts"].get<double>();
    return a_ts != b_ts ? a_ts < b_ts : (*a)["dur"].get<double>() > (*b)["dur"].get<double>();
  });
  std::vector<double> open_ends;
  std::vector<const Json*> open_events;
  for (const Json* event : events) {
    const double begin = (*event)["ts"].get<double>();
    const double end = begin + (*event)["dur"].get<double>();
    EXPECT_GE((*event)["dur"].get<double>(), 0.0);
    // 1 ns of slack: the times are whole nanoseconds, printed as microseconds.
    while (!open_ends.empty() && open_ends.back() <= begin + 1e-3) {
      open_ends.pop_back();
      open_events.pop_back();
    }
    if (!open_ends.empty()) {
      EXPECT_LE(end, open_ends.back() + 1e-3) << event->dump() << " in " << open_events.back()->dump();
    }
    open_ends.push_back(end);
    open_events.push_back(event);
  }
}

void expect_trace_of_every_rank(const Json& trace) {
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::set<int> named;
  std::map<std::pair<int, int>, std::vector<const Json*>> tracks;
  for (const auto& event : trace["traceEvents"]) {
    ASSERT_TRUE(event.contains("ph") && event.contains("pid") && event.contains("name")) << event.dump();
    if (event["ph"] == "M" && event["name"] == "process_name") named.insert(event["pid"].get<int>());
    if (event["ph"] != "X") continue;
    ASSERT_TRUE(event["ts"].is_number() && event["dur"].is_number()) << event.dump();
    EXPECT_GE(event["ts"].get<double>(), 0.0) << event.dump();  // nothing before the aligned start
    tracks[{event["pid"].get<int>(), event["tid"].get<int>()}].push_back(&event);
  }
  EXPECT_EQ(named.size(), static_cast<std::size_t>(world_size()));  // one track per rank
  for (int rank = 0; rank < world_size(); ++rank) {
    EXPECT_TRUE(tracks.count({rank, 0}) > 0) << "rank " << rank;
  }
  for (const auto& [track, events] : tracks) expect_nested(events);
}

TEST(Timeline, TracesEveryRanksStepsAndReductionsNestedWithOverlapAndWithout) {
  for (const bool overlap : {false, true}) {
    const Json trace = trained_trace(iris_settings(1, overlap), overlap ? "overlap" : "plain");
    if (world_rank() != 0) continue;
    expect_trace_of_every_rank(trace);
    std::map<std::string, int> names;
    std::set<int> tids;
    for (const auto& event : trace["traceEvents"]) {
      if (event["ph"] != "X" || event["pid"] != 0) continue;
      ++names[event["name"].get<std::string>()];
      if (event["name"] == "reduce bucket") tids.insert(event["tid"].get<int>());
    }
    for (const char* name : {"step", "forward", "backward", "exposed communication", "optimizer", "reduce bucket"}) {
      EXPECT_GT(names[name], 0) << name;
    }
    EXPECT_EQ(names["forward"], names["step"]);
    EXPECT_GT(names["reduce bucket"], names["step"]);  // several buckets per step
    // Overlap reduces on the communication thread; without it on the training thread.
    EXPECT_EQ(tids, std::set<int>{overlap ? 1 : 0}) << "overlap " << overlap;
  }
}

// A long run traces the first steps and a spread through the rest, never more.
TEST(Timeline, ALongRunKeepsABoundedSampleOfSteps) {
  int64_t timed = 0;
  const Json trace = trained_trace(iris_settings(40, false), "long", &timed);
  if (world_rank() != 0) return;
  std::set<int64_t> steps;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event["name"] == "step" && event["pid"] == 0) steps.insert(event["args"]["step"].get<int64_t>());
  }
  ASSERT_GT(timed, kFirstTracedSteps + kSpreadTracedSteps);
  EXPECT_LE(steps.size(), static_cast<std::size_t>(kFirstTracedSteps + kSpreadTracedSteps + 1));
  for (int64_t s = 0; s < kFirstTracedSteps; ++s) EXPECT_EQ(steps.count(s), 1U) << s;
  EXPECT_GT(*steps.rbegin(), timed * 9 / 10);  // the spread reaches the end of the run
  EXPECT_LT(trace.dump().size(), 2'000'000U);
}

TEST(Timeline, TheCommBenchmarksReductionsAreTraced) {
  PointSettings settings;
  settings.kind = Kind::kComm;
  settings.ranks = world_size();
  apply_setting(settings, "comm_min_bytes", 4, "test");
  apply_setting(settings, "comm_max_bytes", 4096, "test");
  apply_setting(settings, "comm_size_factor", 32, "test");
  apply_setting(settings, "comm_iterations", 8, "test");
  MpiAllreduce backend(MPI_COMM_WORLD);
  Timeline timeline;
  run_comm_benchmark(backend, MPI_COMM_WORLD, settings, {}, &timeline);
  const std::string path = shared_path("comm");
  timeline.write(MPI_COMM_WORLD, path, {}, {});
  if (world_rank() != 0) return;
  const Json trace = read_json_file(path);
  fs::remove(path);
  expect_trace_of_every_rank(trace);
  std::map<int64_t, int> per_size;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X" && event["pid"] == 0) ++per_size[event["args"]["bytes"].get<int64_t>()];
  }
  EXPECT_EQ(per_size, (std::map<int64_t, int>{{4, kTracedIterationsPerSize},
                                               {128, kTracedIterationsPerSize},
                                               {4096, kTracedIterationsPerSize}}));
}

// Without MPI: a step is traced whole or left out, never cut off at the bound (a step of
// hundreds of bucket reductions lost its parents, which are added when it ends).
TEST(Timeline, AStepIsKeptWholeOrLeftOut) {
  Timeline timeline;
  timeline.trace(64, 1000);  // 1,000 events per rank: 500 per track
  ASSERT_EQ(Timeline::max_events_per_rank(64), 1000);
  const auto now = Clock::now();
  for (int64_t step = 0; step < 100; ++step) {
    timeline.begin_step(step);
    for (int event = 0; event < 30; ++event) timeline.add(Track::kTraining, "reduce bucket", now, now);
    timeline.end_step();
  }
  EXPECT_EQ(timeline.events(), 16U * 30U);  // 16 whole steps fit in 500; the 17th would not
}

// Without MPI: which steps a run of 1,000 timed steps traces.
TEST(Timeline, TheSampleIsTheFirstStepsAndASpread) {
  Timeline timeline;
  EXPECT_FALSE(timeline.traces_step(0));  // not tracing
  timeline.trace(2, 1000);
  int64_t traced = 0;
  for (int64_t s = 0; s < 1000; ++s) traced += timeline.traces_step(s) ? 1 : 0;
  EXPECT_LE(traced, kFirstTracedSteps + kSpreadTracedSteps);
  EXPECT_GE(traced, kFirstTracedSteps + kSpreadTracedSteps - 1);
  EXPECT_FALSE(timeline.traces_step(-1));  // a warm-up step
  EXPECT_FALSE(timeline.traces_step(1000));
}

}  // namespace
}  // namespace harness
