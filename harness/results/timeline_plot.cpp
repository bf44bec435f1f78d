#include "harness/results/timeline_plot.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/json.h"
#include "harness/results/plot_data.h"

namespace harness {
namespace {

constexpr int kDrawnSteps = 3;

// Events in drawing order (later ones on top), with their half height: the reductions inside the
// exposed communication are drawn thinner so that both show.
struct EventStyle {
  const char* name;
  double half_height;
};
constexpr EventStyle kStyles[] = {{"forward", 0.35},        {"backward", 0.35}, {"exposed communication", 0.35},
                                  {"optimizer", 0.35},      {"reduce", 0.35},   {"reduce bucket", 0.2},
                                  {"wait", 0.2},            {"average gradients", 0.35}};

// The style an event is drawn with: its name, or for scheme pipeline's per-micro-batch events
// ("forward 3", "wait: activations 3") the kind before the micro-batch.
bool drawn_as(const std::string& event, std::string_view style) {
  if (event == style) return true;
  if (style == "wait") return event.starts_with("wait: ");
  return (style == "forward" || style == "backward") && event.starts_with(std::string(style) + " ");
}

struct Event {
  std::string name;
  int rank = 0;
  int thread = 0;
  double begin_us = 0;
  double end_us = 0;
  int64_t step = 0;
  int64_t bytes = -1;  // a comm benchmark's reduction: its message size
};

std::optional<std::vector<Event>> read_trace(const std::string& path) {
  Json trace;
  try {
    trace = read_json_file(path);
  } catch (const Error&) {
    return std::nullopt;  // no trace, or a damaged one: no timeline plot, as before
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) return std::nullopt;
  std::vector<Event> events;
  try {
    for (const Json& e : trace["traceEvents"]) {
      if (e.value("ph", "") != "X" || !e.contains("ts") || !e.contains("dur") || !e.contains("args")) continue;
      Event event;
      event.name = e.value("name", "");
      event.rank = e.value("pid", 0);
      event.thread = e.value("tid", 0);
      event.begin_us = e["ts"].get<double>();
      event.end_us = event.begin_us + e["dur"].get<double>();
      event.step = e["args"].value("step", int64_t{0});
      event.bytes = e["args"].value("bytes", int64_t{-1});
      events.push_back(std::move(event));
    }
  } catch (const Json::exception&) {
    return std::nullopt;  // a field of the wrong type: a damaged trace
  }
  return events;
}

}  // namespace

std::optional<TimelinePlot> timeline_plot(const ResultSet& set, const ResultsDirectory& directory) {
  const Run* chosen = nullptr;
  for (const Run& run : set.runs()) {
    if (!run.record.ok() || !run.record.settings.timeline) continue;
    if (!std::filesystem::exists(directory.timeline_path(run.record.id))) continue;
    if (chosen == nullptr || run.record.settings.ranks > chosen->record.settings.ranks) chosen = &run;
  }
  if (chosen == nullptr) return std::nullopt;
  auto events = read_trace(directory.timeline_path(chosen->record.id));
  if (!events || events->empty()) return std::nullopt;
  // The comm benchmark numbers its reductions within each message size: one size's (the largest,
  // whose reductions are long enough to see) make the plot, not the same numbers of every size.
  std::string what = "step";
  if (chosen->record.settings.kind == Kind::kComm) {
    int64_t largest = -1;
    for (const Event& e : *events) largest = std::max(largest, e.bytes);
    std::erase_if(*events, [largest](const Event& e) { return e.bytes != largest; });
    what = fmt::format("reductions of {} B,", largest);
  }

  std::set<int64_t> steps;
  for (const Event& e : *events) steps.insert(e.step);
  auto first = steps.begin();
  if (steps.size() > 1) ++first;  // the first traced step warms caches
  std::set<int64_t> drawn;
  for (auto it = first; it != steps.end() && static_cast<int>(drawn.size()) < kDrawnSteps; ++it) drawn.insert(*it);

  double origin = std::numeric_limits<double>::max();
  std::set<std::pair<int, int>> rows;
  for (const Event& e : *events) {
    if (!drawn.count(e.step)) continue;
    origin = std::min(origin, e.begin_us);
    rows.insert({e.rank, e.thread});
  }
  // Rank 0's training thread on top.
  std::map<std::pair<int, int>, int> row_of;
  int next = static_cast<int>(rows.size());
  for (const auto& row : rows) row_of[row] = --next;

  TimelinePlot plot;
  for (const EventStyle& style : kStyles) {
    std::string block;
    for (const Event& e : *events) {
      if (!drawn_as(e.name, style.name) || !drawn.count(e.step)) continue;
      const int row = row_of[{e.rank, e.thread}];
      const double begin_ms = (e.begin_us - origin) / 1e3;
      const double end_ms = (e.end_us - origin) / 1e3;
      block += fmt::format("{:.4f} {} {:.4f} {} \"rank {} {}\"\n", (begin_ms + end_ms) / 2, row,
                           (end_ms - begin_ms) / 2, style.half_height, e.rank,
                           e.thread == 0 ? "training" : "communication");
    }
    if (block.empty()) continue;
    plot.data += (plot.data.empty() ? "" : "\n\n") + block_title(style.name) + block;
  }
  if (plot.data.empty()) return std::nullopt;
  plot.description = fmt::format("{} ({} ranks), {}{} {}", chosen->record.id, chosen->record.settings.ranks, what,
                                 drawn.size() > 1 && what == "step" ? "s" : "",
                                 drawn.size() > 1 ? fmt::format("{} to {}", *drawn.begin(), *drawn.rbegin())
                                                  : std::to_string(*drawn.begin()));
  return plot;
}

}  // namespace harness
