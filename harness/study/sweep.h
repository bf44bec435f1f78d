// The points of an experiment: the cartesian product of its sweep over the fixed settings, without
// the excluded combinations, repeated.
#pragma once

#include <string>
#include <vector>

#include "harness/study/experiment.h"
#include "harness/study/point_key.h"

namespace harness {

// One resolved point of the sweep.
struct Point {
  int index = 0;    // 0-based position in the expansion order
  int repeat = 0;   // 0 .. repeats-1
  PointKey key{PointSettings{}, 0};  // its settings and repeat: what identifies its measurement
  std::string id;   // "p003-1a2b3c4d": index and key hash
  PointSettings settings;
};

inline constexpr std::size_t kMaxPoints = 10000;

// Cartesian product of the sweep over the base settings, last axis fastest, without the excluded
// combinations, repeated `repeats` times (the whole sweep, then again). Throws ConfigError when it
// would exceed kMaxPoints, or when an exclude rule matches nothing or everything.
std::vector<Point> expand(const Experiment& experiment);

// Before a run: a warning naming the fixed settings (changed from their defaults) that no point
// reads (settings_not_read: resnet_depth for iris_mlp, comm_iterations when training), which
// change nothing; "" when there are none.
std::string unread_settings_warning(const Experiment& experiment, const std::vector<Point>& points);

// "iris_mlp allreduce ranks=2 batch_size=4 repeat=1/3": what tells the point apart from the
// others of its experiment (the swept settings), for progress lines and plans.
std::string describe_point(const Experiment& experiment, const Point& point);

}  // namespace harness
