#include "harness/rank/timeline.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "harness/common/files.h"

namespace harness {

void Timeline::trace(int world_size, int64_t timed_steps) {
  enabled_ = true;
  timed_steps_ = timed_steps;
  max_events_ = max_events_per_rank(world_size);
  const int64_t rest = std::max<int64_t>(0, timed_steps - kFirstTracedSteps);
  stride_ = std::max<int64_t>(1, (rest + kSpreadTracedSteps - 1) / kSpreadTracedSteps);
  for (auto& track : tracks_) track.reserve(static_cast<std::size_t>(std::min<int64_t>(max_events_, 4096)));
}

int64_t Timeline::max_events_per_rank(int world_size) {
  return std::max<int64_t>(1000, 40000 / std::max(1, world_size));
}

bool Timeline::traces_step(int64_t index) const {
  if (!enabled_ || index < 0 || index >= timed_steps_) return false;
  return index < kFirstTracedSteps || (index - kFirstTracedSteps) % stride_ == 0;
}

void Timeline::begin_step(int64_t step) {
  step_ = step;
  active_ = enabled_;
  for (int track = 0; track < 2; ++track) {
    step_start_[track] = tracks_[track].size();
    if (static_cast<int64_t>(tracks_[track].size() + most_per_step_[track]) > max_events_ / 2) active_ = false;
  }
  if (enabled_ && !active_) ++steps_left_out_;
}

void Timeline::end_step() {
  if (active_) {
    for (int track = 0; track < 2; ++track) {
      most_per_step_[track] = std::max(most_per_step_[track], tracks_[track].size() - step_start_[track]);
    }
  }
  active_ = false;
}

void Timeline::add(Track track, std::string_view name, Clock::time_point begin, Clock::time_point end,
                   int64_t bytes, int64_t bucket) {
  if (!active_) return;
  auto& events = tracks_[static_cast<int>(track)];
  // Each track's count is its own thread's: the bound is split between them.
  if (static_cast<int64_t>(events.size()) >= max_events_ / 2) {
    ++dropped_[static_cast<int>(track)];
    return;
  }
  const auto nanos = [this](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
  };
  events.push_back({std::string(name), nanos(begin), nanos(end), step_, bytes, bucket});
}

Json Timeline::events_json(int rank) const {
  Json list = Json::array();
  for (int track = 0; track < 2; ++track) {
    for (const auto& event : tracks_[track]) {
      Json args = {{"step", event.step}};
      if (event.bytes >= 0) args["bytes"] = event.bytes;
      if (event.bucket >= 0) args["bucket"] = event.bucket;
      // The format's unit is the microsecond; whole nanoseconds keep adjacent events adjacent.
      list.push_back({{"name", event.name},
                      {"ph", "X"},
                      {"pid", rank},
                      {"tid", track},
                      {"ts", static_cast<double>(event.begin_ns) / 1e3},
                      {"dur", static_cast<double>(event.end_ns - event.begin_ns) / 1e3},
                      {"args", std::move(args)}});
    }
  }
  return list;
}

void Timeline::write(const Communicator& communicator, const std::string& path, const std::vector<std::string>& hosts,
                     const Json& about) const {
  const std::string mine = Json{{"events", events_json(communicator.rank())}, {"dropped", dropped_[0] + dropped_[1]}}.dump();
  const std::vector<std::string> all = gather_to_root(communicator, mine);
  const int ranks = communicator.size();
  if (communicator.rank() != 0) return;

  Json trace_events = Json::array();
  int64_t dropped = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::string host = r < static_cast<int>(hosts.size()) ? hosts[r] : "";
    trace_events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                            {"args", {{"name", fmt::format("rank {} ({})", r, host)}}}});
    trace_events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    for (const auto& [tid, name] : {std::pair{0, "training"}, std::pair{1, "communication"}}) {
      trace_events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", tid},
                              {"args", {{"name", name}}}});
    }
    Json part = Json::parse(all[static_cast<std::size_t>(r)]);
    dropped += part["dropped"].get<int64_t>();
    for (auto& event : part["events"]) trace_events.push_back(std::move(event));
  }
  Json other = about;
  other["dropped_events"] = dropped;
  const std::string sample =
      sample_text_.empty() ? fmt::format("the first {} timed steps, then one in {}", kFirstTracedSteps, stride_)
                           : sample_text_;
  other["traced_steps"] = fmt::format("{}{}", sample,
                                      steps_left_out_ == 0
                                          ? ""
                                          : fmt::format(" ({} of them left out on rank 0: the events' bound)",
                                                        steps_left_out_));
  const Json trace = {{"traceEvents", std::move(trace_events)}, {"displayTimeUnit", "ms"}, {"otherData", other}};
  write_file_atomically(path, trace.dump());
}

}  // namespace harness
