// Tests that write records of an experiment's points by hand ("exp.json", experiment "exp"): the
// record's identity, settings and provenance, status ok, no measurements yet; and an empty
// results directory to write them into.
#pragma once

#include <filesystem>
#include <string>

#include "harness/results/provenance.h"
#include "harness/results/record.h"
#include "harness/results/results_directory.h"
#include "harness/study/sweep.h"

namespace harness {

inline PointRecord ok_record_of(const Point& point) {
  PointRecord record;
  record.experiment = "exp";
  record.id = point.id;
  record.index = point.index;
  record.repeat = point.repeat;
  record.key = point.key.hash();
  record.settings = point.settings;
  record.provenance = current_provenance({"harness", "run", "exp.json"});
  record.status = PointStatus::kOk;
  return record;
}

// An empty results directory, harness_<name> under the temporary directory.
inline ResultsDirectory fresh_results_directory(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("harness_" + name);
  std::filesystem::remove_all(path);
  ResultsDirectory directory(path.string());
  directory.create();
  return directory;
}

}  // namespace harness
