// Fake SLURM commands for the end-to-end tests of the SLURM launcher's ownership of its jobs
// (slurm_ownership_test.cpp): bash scripts first on PATH that keep their jobs in files, so that
// each hostile moment (an sbatch that hangs, a scancel that fails) can be staged exactly.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/json.h"

namespace harness::e2e {

// Jobs live in STATE/jobs as "id|state|comment" lines; sbatch's N-th call does what STATE/mode_N
// says (kill: kill the harness after queueing; hang: queue, then hang; hang-unqueued: hang without
// queueing) and copies the ledger (path in STATE/ledger) to STATE/ledger_at_call_N.json first.
// While STATE/refuse exists, every call is refused as SLURM refuses a job (exit 1, its reason).
constexpr const char* kSbatch = R"sh(#!/bin/bash
state=$FAKE_SLURM
script="${@: -1}"
n=$(( $(cat "$state/calls" 2>/dev/null || echo 0) + 1 )); echo $n > "$state/calls"
cp "$(cat "$state/ledger")" "$state/ledger_at_call_$n.json" 2>/dev/null
mode=$(cat "$state/mode_$n" 2>/dev/null)
if [[ -f $state/refuse ]]; then
  echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2
  exit 1
fi
if [[ $mode == hang-unqueued ]]; then sleep 60; exit 1; fi
id=$((1000 + n))
echo "$id|PENDING|$(sed -n 's/^#SBATCH --comment=//p' "$script")" >> "$state/jobs"
cp "$script" "$state/script_$id.sh"
if [[ $mode == kill ]]; then kill -KILL $PPID; sleep 5; fi
if [[ $mode == hang ]]; then sleep 60; fi
if [[ $mode == slow ]]; then touch "$state/slow_$n"; sleep 3; fi
if [[ $mode == block-ledger ]]; then l=$(cat "$state/ledger"); rm -f "$l"; mkdir -p "$l/blocked"; fi
echo $id
)sh";
constexpr const char* kSqueue = R"sh(#!/bin/bash
state=$FAKE_SLURM
format="%i|%T|%r|%N"
for a in "$@"; do case $a in --format=*) format=${a#--format=};; esac; done
[[ -f $state/jobs ]] || exit 0
while IFS='|' read -r id st comment; do
  if grep -qx "$id" "$state/cancelled" 2>/dev/null; then st=CANCELLED; fi
  if [[ $format == "%F|%k" ]]; then echo "$id|$comment"; else echo "$id|$st|None|"; fi
done < "$state/jobs"
)sh";
constexpr const char* kScancel = R"sh(#!/bin/bash
state=$FAKE_SLURM
echo "$*" >> "$state/scancel_calls"
if [[ -f $state/scancel_fails ]]; then
  echo "scancel: error: Unable to contact slurm controller (connect failure)" >&2; exit 1
fi
for id in "$@"; do echo "$id" >> "$state/cancelled"; done
)sh";
constexpr const char* kScontrol = R"sh(#!/bin/bash
echo "MaxArraySize = 1001"
echo "MinJobAge = 300 sec"
if [[ -f $FAKE_SLURM/accounting ]]; then echo "AccountingStorageType = accounting_storage/slurmdbd"
else echo "AccountingStorageType = accounting_storage/none"; fi
)sh";
// As SLURM's sacct without --state: only jobs eligible to start (here, none still pending).
constexpr const char* kSacct = R"sh(#!/bin/bash
state=$FAKE_SLURM
echo "$*" >> "$state/sacct_calls"
[[ -f $state/jobs ]] || exit 0
while IFS='|' read -r id st comment; do
  if grep -qx "$id" "$state/cancelled" 2>/dev/null; then st=CANCELLED; fi
  [[ $st == PENDING ]] || echo "$id|$st|"
done < "$state/jobs"
)sh";
constexpr const char* kSinfo = "#!/bin/bash\necho '2|UNLIMITED|debug*'\n";

struct FakeCluster {
  fs::path dir;
  fs::path state;
  fs::path out;
  fs::path experiment;
  std::vector<std::pair<std::string, std::string>> environment;

  std::string text(const std::string& name) const { return read_text(state / name); }
  int sbatch_calls() const {
    const std::string calls = text("calls");
    return calls.empty() ? 0 : std::stoi(calls);
  }
  Json ledger() const { return read_json_file((out / "jobs" / "ledger.json").string()); }
  std::vector<std::string> ledger_jobs() const {
    std::vector<std::string> jobs;
    const Json json = ledger();
    for (const auto& entry : json["jobs"]) jobs.push_back(entry["job"]);
    return jobs;
  }
  HarnessRun harness(std::vector<std::string> arguments, const std::string& log) const {
    return run_harness(arguments, dir / log, environment);
  }
};

inline std::string own_experiment(const std::string& launcher, const std::string& batch_sizes) {
  return R"({"name": "own", "launcher": )" + launcher + R"(,
    "settings": {"workload": "iris_mlp", "epochs": 1, "timeout_s": 60}, "sweep": {"batch_size": [)" +
         batch_sizes + "]}}";
}

inline FakeCluster fake_cluster(const std::string& name, const std::string& launcher, int points = 3) {
  FakeCluster cluster;
  cluster.dir = scratch("slurm_own_" + name);
  cluster.state = cluster.dir / "state";
  cluster.out = cluster.dir / "out";
  const fs::path bin = cluster.dir / "bin";
  fs::create_directories(cluster.state);
  fs::create_directories(bin);
  for (const auto& [program, text] : std::vector<std::pair<std::string, std::string>>{
           {"sbatch", kSbatch}, {"squeue", kSqueue}, {"scancel", kScancel}, {"scontrol", kScontrol},
           {"sinfo", kSinfo}, {"sacct", kSacct}}) {
    std::ofstream(bin / program) << text;
    fs::permissions(bin / program, fs::perms::owner_all);
  }
  std::ofstream(cluster.state / "ledger") << (cluster.out / "jobs" / "ledger.json").string();
  std::string sizes;
  for (int i = 0; i < points; ++i) sizes += (i == 0 ? "" : ", ") + std::to_string(4 << i);
  cluster.experiment = write_experiment(cluster.dir, own_experiment(launcher, sizes));
  const char* path = std::getenv("PATH");
  cluster.environment = {{"PATH", bin.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")},
                         {"FAKE_SLURM", cluster.state.string()}};
  return cluster;
}

}  // namespace harness::e2e
