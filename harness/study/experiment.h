// Experiment files: parsing, validation and expansion of the sweep into points.
//
// Format (v1):
//   {
//     "name": "speedup",                      // required; names the results directory
//     "description": "...",                   // optional
//     "launcher": "local",                    // optional; how points are started
//     "settings": { "workload": "iris_mlp", "epochs": 20 },   // fixed for every point
//     "sweep": { "ranks": [1, 2], "batch_size": [4, 16],       // cartesian product
//                "zip": { "workload": ["iris_mlp", "mnist_cnn"], "lr": [0.5, 0.05] } }
//   }
// Keys of "settings" and "sweep" are the setting keys of settings.h; a key may not be in both.
// A "zip" group (an object, or a list of them) is one axis of the product whose lists, of equal
// length, vary together: its i-th point takes the i-th value of every list.
//   "exclude": [ { "backend": "ps", "ranks": [1, 2] } ]   // drop points matching every key
//   "repeats": 3                       // run each point 3 times (all points, then all again)
//   "baseline": { "backend": "allreduce", "ranks": 1 }   // speedup against this point
// A "baseline" names values for some keys: each point is compared with the point equal to it on
// every other key and having those values (default: the fewest ranks, otherwise equal).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

struct SweepAxis {
  std::string key;
  std::vector<Json> values;
  // Axes with the same group number (>= 0) come from one "zip" group and move together.
  int zip_group = -1;
  std::string path;  // where the list is in the file: "sweep.lr", "sweep.zip.lr", "sweep.zip[1].lr"
};

struct Experiment {
  std::string source_path;  // as given on the command line, for error messages
  std::string source_text;  // the file as read, copied into the results
  std::string name;
  std::string description;
  std::string launcher = "local";
  PointSettings base;            // defaults overlaid with "settings"
  std::vector<SweepAxis> sweep;  // in file order; the last axis varies fastest
  // "exclude" rules, normalised: setting key -> the values (as to_json writes them) that match.
  std::vector<std::vector<std::pair<std::string, std::vector<Json>>>> exclude;
  int repeats = 1;
  Json baseline = Json::object();  // setting key -> value, normalised; empty = fewest ranks
};

// One resolved point of the sweep.
struct Point {
  int index = 0;    // 0-based position in the expansion order
  int repeat = 0;   // 0 .. repeats-1
  std::string id;   // "p003-1a2b3c4d": index and settings hash (see point_hash)
  PointSettings settings;
};

// Reads and validates an experiment file. Throws ConfigError ("file: field: expected ..., got ...").
Experiment load_experiment(const std::string& path);
// Same, from already-read text (tests use this; `source_path` only labels errors).
Experiment parse_experiment(const std::string& text, const std::string& source_path);

inline constexpr std::size_t kMaxPoints = 10000;

// Cartesian product of the sweep over the base settings, last axis fastest, without the excluded
// combinations, repeated `repeats` times (the whole sweep, then again). Throws ConfigError when it
// would exceed kMaxPoints, or when an exclude rule matches nothing or everything.
std::vector<Point> expand(const Experiment& experiment);

// 8 hex digits naming a point's resolved settings, its repeat and the harness version: a
// results directory holds at most one completed record per hash, which is how `harness run`
// resumes.
std::string point_hash(const PointSettings& settings, int repeat = 0);
// "p003-1a2b3c4d": position plus point_hash.
std::string point_id(int index, const PointSettings& settings, int repeat = 0);

}  // namespace harness
