// Records set aside. A point that a run runs again (--fresh, a failed or older record) has its
// earlier records moved aside before its job is submitted: points/<id>.json becomes
// points/<id>.json.superseded, with its log and trace (logs/<id>.log.superseded,
// logs/<id>.trace.json.superseded). So no report, check or status takes an earlier record for this
// run's, whether the new job is refused, cancelled, interrupted or fails, or its record cannot be
// written (a rename needs no free space); and nothing is lost: a later run without --fresh takes
// an ok record set aside back as its point's, as it would have kept it in place, and a new ok
// record of the point removes the ones set aside.
//
// A point keeps one record aside under each name: an ok one rather than one that is not, else the
// later one.
#pragma once

#include <string>
#include <vector>

#include "harness/results/results_directory.h"

namespace harness {

// "DIR/points/<id>.json" as it is named once set aside.
std::string superseded_path(const std::string& record_path);

// Every record set aside in DIR/points (*.json.superseded), in file name order; a file that is not
// a readable record is left out (it is never taken back).
std::vector<StoredRecord> read_superseded_records(const ResultsDirectory& directory);

// Sets the record `file` (a readable record in DIR/points) aside with its log and trace. Returns
// where it went, or "" when it was removed instead because an ok record of the same name waits
// aside and it is not ok. Throws Error when the record cannot be renamed (it stays in place).
std::string set_record_aside(const ResultsDirectory& directory, const StoredRecord& file);

// The log and trace set aside with the record at `superseded` become point `id`'s, replacing its
// own (which belonged to the record the restored one replaces); a record set aside without them
// leaves the point none.
void take_back_files(const ResultsDirectory& directory, const std::string& superseded, const std::string& id);

// Removes a record set aside, with its log and trace: its point has a new ok record.
void remove_superseded(const ResultsDirectory& directory, const std::string& superseded);

}  // namespace harness
