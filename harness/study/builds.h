// Several builds of the harness in one sweep. An experiment names builds ("builds": {"base":
// "build-base/harness", "head": "build/harness"}, or `harness run --build NAME=PATH`), and the
// setting `build` says whose rank program runs a point: the orchestrator stays the running
// harness, each point's ranks run `<that build> worker`. Repeats interleave builds like any other
// axis, so the two builds of a comparison share the machine, its noise and its mood, which a
// baseline recorded elsewhere never does (the CI gate compares head with base this way).
//
// An experiment that names builds but neither sets nor sweeps `build` sweeps it over all of them,
// as the last axis (the fastest): the builds of one configuration run back to back.
//
// A build may be older than the running harness: it gets only the settings it knows (those it
// does not know must keep their default there, or the point is refused before launch).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/study/experiment.h"
#include "harness/study/sweep.h"

namespace harness {

// Reads "builds": an object of build names (letters, digits, '_', '.', '-') to paths. `where`
// names it ("exp.json: builds"). Throws ConfigError.
std::vector<NamedBuild> read_builds(const Json& block, const std::string& where);

// Checks that every value of `build` in the settings and the sweep names one of the experiment's
// builds, or one of `named_elsewhere` (builds the command line adds before the experiment is read
// again with them), and sweeps `build` over every build when the experiment names builds but does
// not set or sweep it (`build_set`: "settings" has the key, even as "", which is the running
// harness). Throws ConfigError naming the field.
void use_builds(Experiment& experiment, bool build_set, const std::set<std::string>& named_elsewhere = {});

// What a build of the harness says of itself: `PATH --version` and `PATH schema`.
struct BuildFacts {
  std::string version;  // "0.3.0"
  std::string commit;   // "31f404a0c2b1", "...-dirty", "unknown"
  std::set<std::string> settings;   // the setting keys its experiments (and its worker) take
  std::set<std::string> backends;   // the backend names it has
  std::set<std::string> workloads;  // the workload names it has
  // Each setting's default in that build (its schema's "default"), by key: what its rank program
  // uses for a setting it is not sent.
  Json defaults = Json::object();
  // The MPI it was built against, from its --version's "MPI: ... (family F, launcher L)" line:
  // its points start with that family's launcher (mpi_dialect.h). "" for builds before the line.
  std::string mpi_family;
  std::string mpi_launcher;
};

// The settings every build's rank program is sent: those the running harness itself acts on when
// it launches a point (how many ranks on which nodes, threads, device, time limit, the trace it
// collects), so that the ranks run as they were started, and those that name the configuration in
// every table and check (workload, backend). Any other setting is sent to a named build only when
// the experiment sets it.
const std::set<std::string>& settings_always_sent();

// Parses what a build printed. Throws ConfigError "<where>: ..." when it is not what a harness
// prints (so the path is not a harness binary).
BuildFacts parse_build_facts(const std::string& version_output, const std::string& schema_output,
                             const std::string& where);

// The settings a point's worker gets (its --settings). For the running harness's own rank program
// (`facts` null): every setting but `build`. For a named build: only those the experiment sets
// (`set_keys`) and those always sent, and of them only the ones the build knows
// (validate_builds has checked that the others keep their default): every other setting takes the
// build's own default, so that a default changed between two builds is measured as the change it
// is, not handed to both.
Json worker_settings(const PointSettings& settings, const BuildFacts* facts, const std::set<std::string>& set_keys);

// The settings a named build's rank program runs a point with: its own defaults (`facts`), with
// what it was sent (`sent`, worker_settings' result) over them. Records keep it (BuildProvenance).
Json settings_run_by(const BuildFacts& facts, const Json& sent);

// Before a run: a warning when the builds of each configuration run back to back (`build` is the
// last axis of the sweep, alone or zipped) an odd number of times. Every second repeat runs the
// sweep backwards, so each build runs second in half the pairs only when the repeats are even,
// and the second point of a pair can run slower (docs/ci-gate.md); "" otherwise.
std::string build_order_warning(const Experiment& experiment);

// Throws ConfigError, naming the field, for a point whose build lacks its backend or workload or
// a setting it changes from the default. `facts` holds every build the points name.
void validate_builds(const Experiment& experiment, const std::vector<Point>& points,
                     const std::map<std::string, BuildFacts>& facts);

}  // namespace harness
