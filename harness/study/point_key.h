// What identifies a measurement: a point's settings, in their canonical form (every key as
// to_json writes them, but `build` when it is the running harness's: such points keep the keys
// they had before builds could be named; likewise the settings added later, at their defaults), and its
// repeat. Not its position in the sweep (an edited sweep moves
// points) and not the harness version (a newer harness reads older results): resume, plot, the
// time estimate and check all find "the same point" in any results directory through this.
#pragma once

#include <compare>
#include <string>

#include "harness/study/settings.h"

namespace harness {

class PointKey {
 public:
  PointKey(const PointSettings& settings, int repeat);

  // "<settings as JSON>|<repeat>": equal texts, equal points.
  const std::string& text() const { return text_; }
  // 8 hex digits of the text, for ids and file names (equal hashes of different keys are
  // possible, if unlikely: compare keys, not hashes).
  std::string hash() const;

  friend bool operator==(const PointKey&, const PointKey&) = default;
  friend auto operator<=>(const PointKey&, const PointKey&) = default;

 private:
  std::string text_;
};

// "p003-1a2b3c4d": the point's position in the sweep and its key's hash.
std::string point_id(int index, const PointKey& key);

}  // namespace harness
