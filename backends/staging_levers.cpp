#include "backends/staging_levers.h"

#include <algorithm>
#include <set>

namespace harness {

int reduction_threads_started(const StagingLeverSettings& settings, bool staged, int threads_per_rank) {
  if (settings.reduce_threads) return std::max(1, *settings.reduce_threads);
  if (!staged) return 1;
  return std::max(1, std::min(kAutoReduceThreads, threads_per_rank > 0 ? threads_per_rank : kAutoReduceThreads));
}

bool copy_engine_may_gather(const StagingLeverSettings& settings, bool staged) {
  return staged && settings.copy_engine_gathers.value_or(true);
}

StagingLevers staging_levers(std::size_t bytes, std::size_t chunk_bytes, const StagingLeverSettings& settings,
                             int threads, bool can_gather) {
  const bool large = bytes >= kStagingLeversFromBytes;
  StagingLevers levers;
  levers.reduce_threads = std::max(1, (settings.reduce_threads.has_value() || large) ? threads : 1);
  const bool gathers = settings.copy_engine_gathers ? *settings.copy_engine_gathers && bytes > chunk_bytes : large;
  levers.copy_engine_gathers = can_gather && gathers;
  return levers;
}

std::vector<StagingLeverStep> staging_lever_steps(std::size_t chunk_bytes, const StagingLeverSettings& settings,
                                                  int threads, bool can_gather) {
  // Where a lever can change: past one chunk (a set gathering) and at kStagingLeversFromBytes
  // ("auto"). Staged buffers hold floats, so the first size past a chunk is a float more.
  const std::set<std::size_t> edges = {0, chunk_bytes + sizeof(float), kStagingLeversFromBytes};
  std::vector<StagingLeverStep> steps;
  for (const std::size_t from : edges) {
    const StagingLevers levers = staging_levers(from, chunk_bytes, settings, threads, can_gather);
    if (steps.empty() || !(steps.back().levers == levers)) steps.push_back({from, levers});
  }
  return steps;
}

}  // namespace harness
