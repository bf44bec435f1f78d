#include "harness/results/estimate.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "harness/common/text.h"
#include "harness/results/results_directory.h"

namespace harness {

double SweepEstimate::total_s() const {
  return measured == 0 ? 0 : measured_s / measured * points;
}

SweepEstimate estimate_sweep(const std::vector<Point>& points, const std::string& root) {
  namespace fs = std::filesystem;
  std::map<std::string, double> wall_time_by_key;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it->path().filename() != "points" || !it->is_directory()) continue;
    for (const auto& stored : read_stored_records(ResultsDirectory(it->path().parent_path().string()))) {
      if (!stored.record || !stored.record->ok()) continue;
      const PointRecord& record = *stored.record;
      wall_time_by_key[PointKey(record.settings, record.repeat).text()] = record.launch.wall_time_s;
    }
  }
  SweepEstimate estimate;
  estimate.points = static_cast<int>(points.size());
  for (const auto& point : points) {
    const auto found = wall_time_by_key.find(point.key.text());
    estimate.earlier_s.push_back(found == wall_time_by_key.end() ? 0 : found->second);
    if (found == wall_time_by_key.end()) continue;
    estimate.measured_s += found->second;
    ++estimate.measured;
  }
  return estimate;
}

std::string describe_estimate(const SweepEstimate& estimate, const std::string& root) {
  if (estimate.measured == 0) {
    return fmt::format("estimated time: unknown (no earlier results of these points under {}/)", root);
  }
  return fmt::format("estimated time: {} ({} of {} point(s) measured before under {}/{})",
                     format_duration(estimate.total_s()), estimate.measured, estimate.points, root,
                     estimate.measured < estimate.points ? "; the others at their mean" : "");
}

}  // namespace harness
