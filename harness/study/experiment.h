// Experiment files: parsing and validation of the document into an Experiment. expand()
// (sweep.h) turns it into points.
//
// Format:
//   {
//     "name": "speedup",                      // required; names the results directory
//     "description": "...",                   // optional
//     "launcher": "local",                    // optional; or {"name": "local", <its options>}
//     "settings": { "workload": "iris_mlp", "epochs": 20 },   // fixed for every point
//     "sweep": { "ranks": [1, 2], "batch_size": [4, 16],       // cartesian product
//                "zip": { "workload": ["iris_mlp", "mnist_cnn"], "lr": [0.5, 0.05] } }
//   }
// Keys of "settings" and "sweep" are the rows of the settings table (settings.h); a key may not be
// in both. A "zip" group (an object, or a list of them) is one axis of the product whose lists, of
// equal length, vary together: its i-th point takes the i-th value of every list.
//   "exclude": [ { "backend": "ps", "ranks": [1, 2] } ]   // drop points matching every key
//   "repeats": 3                       // run each point 3 times (all points, then all again)
//   "baseline": { "backend": "allreduce", "ranks": 1 }   // speedup against this point
//   "check": { "against": {...}, "metrics": {...} }      // for harness check (check/check_options.h)
//   "convergence": { "loss_band": 0.05, "accuracy_band": 1 }  // results/convergence.h
//   "builds": { "base": "build-base/harness", "head": "build/harness" }  // study/builds.h
// A "baseline" names values for some keys: each point is compared with the point equal to it on
// every other key and having those values (default: the fewest ranks, otherwise equal).
#pragma once

#include <set>
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

// The experiment's "launcher": a scheduler's name and its options, as written. Checked against
// the scheduler table when the launcher is made (launch/scheduler.h), before anything runs.
struct LauncherSpec {
  std::string name = "local";
  Json options = Json::object();
  std::string where;  // "exp.json: launcher", for messages; "" when the file has no launcher
};

// A harness build whose rank program points can run (the `build` setting names it; study/builds.h).
struct NamedBuild {
  std::string name;
  std::string path;   // as written; `harness run` makes it absolute (from the working directory)
  std::string where;  // "exp.json: builds.base", or "--build base" for one named on the command line
};

struct Experiment {
  std::string source_path;  // as given on the command line, for error messages
  std::string source_text;  // the file as read, copied into the results
  std::string name;
  std::string description;
  LauncherSpec launcher;
  PointSettings base;            // defaults overlaid with "settings"
  std::vector<SweepAxis> sweep;  // in file order; the last axis varies fastest
  // "exclude" rules, normalised: setting key -> the values (as to_json writes them) that match.
  std::vector<std::vector<std::pair<std::string, std::vector<Json>>>> exclude;
  int repeats = 1;
  Json baseline = Json::object();  // setting key -> value, normalised; empty = fewest ranks
  // "check", as written (an object); check/check_options.h reads it, and `run` checks it before
  // anything runs.
  Json check = Json::object();
  // "convergence": the bands within which a configuration's final loss (absolute) and accuracy
  // (percentage points) count as its baseline's; absent keys: from the baseline's spread.
  Json convergence = Json::object();
  // "builds", in file order; empty: every point runs the running harness's rank program.
  std::vector<NamedBuild> builds;
  // The setting keys that the experiment gives values to: those of "settings" and of the sweep
  // (with what the command line set or swept). A named build's rank program gets only these, so
  // that every other setting takes that build's own default (study/builds.h).
  std::set<std::string> set_keys;
};

// Reads and validates an experiment file (bounded: see common/files.h). Throws ConfigError
// ("file: field: expected ..., got ..."). `builds_named_elsewhere`: the names of builds that the
// command line adds (--build NAME=PATH), which values of `build` may name before they are added.
Experiment load_experiment(const std::string& path, const std::set<std::string>& builds_named_elsewhere = {});
// Same, from already-read text (tests use this; `source_path` only labels errors).
Experiment parse_experiment(const std::string& text, const std::string& source_path,
                            const std::set<std::string>& builds_named_elsewhere = {});

}  // namespace harness
