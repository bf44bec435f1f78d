// The rank program of each point: `<binary> worker`, where the binary is the running harness or
// the build that the point's `build` setting names (study/builds.h). `harness run` probes every
// build once, before anything runs: `PATH --version` says which version and commit it is (the
// records keep them, with a fingerprint of the binary), `PATH schema` which settings, backends and
// workloads it has (its points get only the settings it knows). `harness status` and `cancel`
// need only the paths: the jobs they collect carry their builds in the directory's ledger.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "harness/results/record.h"
#include "harness/study/builds.h"

namespace harness {

class RankPrograms {
 public:
  // Every point runs `self` (an experiment without builds).
  explicit RankPrograms(std::string self = "") : self_(std::move(self)) {}

  // Probes every build of `experiment`. Throws ConfigError naming the build ("exp.json:
  // builds.base: ..." or "--build base: ...") when its path is not an executable harness binary.
  static RankPrograms probe(const Experiment& experiment, const std::string& self);
  // The builds' paths without probing them (harness status and cancel, which must work even when
  // a build has been deleted or rebuilt since the run).
  static RankPrograms unprobed(const Experiment& experiment, const std::string& self);

  const std::string& path_for(const PointSettings& settings) const;
  // The point worker's --settings (builds.h: worker_settings): for a named build, only what the
  // experiment sets and those always sent (launch settings, workload and backend).
  Json worker_settings_for(const PointSettings& settings) const;
  // What the point's record says of its build, with the settings it ran with (its own defaults
  // under what it was sent) when it was probed; nothing for the running harness.
  std::optional<BuildProvenance> provenance_for(const PointSettings& settings) const;
  // What every probed build said of itself, by name (for validate_builds).
  std::map<std::string, BuildFacts> facts() const;
  // A named build's MPI family and launcher (BuildFacts); nothing for the running harness or a
  // build that did not say.
  std::optional<std::pair<std::string, std::string>> mpi_for(const PointSettings& settings) const;

 private:
  struct Build {
    std::string path;  // absolute
    std::optional<BuildFacts> facts;
    std::string fingerprint;  // BuildProvenance::fingerprint
  };
  const Build* build_of(const PointSettings& settings) const;

  std::string self_;
  std::map<std::string, Build> builds_;
  std::set<std::string> set_keys_;  // the experiment's (Experiment::set_keys)
};

}  // namespace harness
