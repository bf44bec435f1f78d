// The timeline: what each rank did during a bounded sample of steps, written by rank 0 as one
// Chrome trace-event JSON file (opens in https://ui.perfetto.dev and chrome://tracing).
//
// One process per rank ("rank 0 (host)"), with a thread for the training loop (step, forward,
// backward, the exposed communication, the optimizer, and the bucket reductions when they run on
// that thread) and one for the communication thread's bucket reductions (with overlap). The comm
// benchmark's timed reductions go on the training thread.
//
// Bounded whatever the run's length: the first kFirstTracedSteps timed steps and about
// kSpreadTracedSteps more spread evenly over the rest, and at most max_events_per_rank() events
// per rank: a sampled step that might not fit is left out whole (counted), and an event beyond the
// bound is dropped (counted). Times are microseconds since each rank's clock was
// started right after a barrier that all ranks leave together, which aligns the ranks' clocks
// (within the barrier's skew, microseconds on one node) even across hosts.
//
// Threading: each track is written by one thread only (training or communication); the events
// are read after the loop, when the communication thread is idle.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/communicator.h"
#include "harness/common/clock.h"
#include "harness/common/json.h"

namespace harness {

inline constexpr int64_t kFirstTracedSteps = 10;
inline constexpr int64_t kSpreadTracedSteps = 40;

enum class Track { kTraining = 0, kCommunication = 1 };

class Timeline {
 public:
  // Traces nothing until trace().
  Timeline() = default;
  // From now on traces up to about kFirstTracedSteps + kSpreadTracedSteps of `timed_steps` steps.
  void trace(int world_size, int64_t timed_steps);

  bool enabled() const { return enabled_; }
  // What the trace's otherData.traced_steps says was sampled, where it is not trace()'s steps
  // (the comm benchmark's reductions per size).
  void describe_sample(std::string text) { sample_text_ = std::move(text); }
  // The per-rank bound: about 40,000 events in the file, at least 1,000 per rank.
  static int64_t max_events_per_rank(int world_size);

  // Call right after a barrier: event times are offsets from now.
  void start_clock() { origin_ = Clock::now(); }
  // Whether the timed step `index` (counted from 0) is one of the traced ones.
  bool traces_step(int64_t index) const;
  // Events are kept while a traced step runs (between these two calls); `step` labels them. A
  // step is kept whole or not at all: one that might not fit under the bound (as many events as
  // the largest step so far) is left out and counted, rather than cut off from its parents.
  void begin_step(int64_t step);
  void end_step();
  bool active() const { return active_; }

  // A complete event ("ph": "X") on `track`; `bytes` and `bucket` go into its args when >= 0.
  void add(Track track, std::string_view name, Clock::time_point begin, Clock::time_point end,
           int64_t bytes = -1, int64_t bucket = -1);
  std::size_t events() const { return tracks_[0].size() + tracks_[1].size(); }

  // Collective over `communicator`: every rank's events go to rank 0, which writes `path` (the
  // trace's "otherData" holds `about`). Rank 0's host names label the processes.
  void write(const Communicator& communicator, const std::string& path, const std::vector<std::string>& hosts,
             const Json& about) const;

 private:
  struct Event {
    std::string name;
    int64_t begin_ns = 0;  // since origin_
    int64_t end_ns = 0;
    int64_t step = -1;
    int64_t bytes = -1;
    int64_t bucket = -1;
  };
  Json events_json(int rank) const;

  bool enabled_ = false;
  bool active_ = false;
  int64_t timed_steps_ = 0;
  int64_t stride_ = 1;  // between the spread steps
  int64_t max_events_ = 0;
  int64_t step_ = -1;
  int64_t dropped_[2] = {0, 0};  // per track: each written by its own thread
  // Both read on the training thread between steps, when the communication thread is idle.
  std::size_t step_start_[2] = {0, 0};  // each track's events when the step began
  std::size_t most_per_step_[2] = {0, 0};
  int64_t steps_left_out_ = 0;
  std::string sample_text_;
  Clock::time_point origin_ = Clock::now();
  std::vector<Event> tracks_[2];
};

}  // namespace harness
