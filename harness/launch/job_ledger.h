// The ledger of a results directory (DIR/jobs/ledger.json): the jobs in flight whose points have
// no record yet, with the scheduler's ids for them. Jobs of a cluster outlive the harness that
// submitted them; with the ledger, a later `harness status`, `harness cancel` or resumed run
// finds and follows them. Written atomically whenever a job is submitted or ends.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/common/json.h"
#include "harness/results/record.h"
#include "harness/results/results_directory.h"

namespace harness {

struct LedgerEntry {
  std::string point_id;
  std::string key;                   // the point's key hash: an edited sweep does not adopt it
  std::string external_id;           // the scheduler's (Scheduler::external_id)
  std::string measurements_path;     // where its rank 0 writes
  std::vector<std::string> command;  // what starts its ranks, for the record
  double submitted_at = 0;
  // The named build its ranks run, as probed when it was submitted: what its record says, even
  // when the binary has been rebuilt by the time the job ends.
  std::optional<BuildProvenance> build;
  std::string attempt;  // the job's JobSpec::attempt ("" in ledgers of older harnesses)
};

struct JobLedger {
  // Names every job ever submitted into this directory (SLURM: harness-<sweep id>), so that one
  // query finds them all.
  std::string sweep_id;
  Json launcher = Json::object();  // {"name": ..., options} as the jobs were submitted with
  std::vector<LedgerEntry> entries;
};

inline constexpr int kLedgerSchemaVersion = 1;

// The directory's ledger; one with a new sweep id and no entries when there is none. Throws Error
// naming the file when it is unreadable.
JobLedger read_ledger(const ResultsDirectory& directory);
// Throws Error naming the file.
void write_ledger(const ResultsDirectory& directory, const JobLedger& ledger);

// Throws ConfigError when the directory's ledger holds jobs in flight through another launcher
// than `launcher` (saying how to follow, see or stop them), or Error when it is unreadable:
// before a run changes anything in the directory.
void refuse_jobs_of_another_launcher(const ResultsDirectory& directory, const JobLedger& ledger,
                                     std::string_view launcher);

}  // namespace harness
