// The rows of one candidate configuration of `harness check`: what it is held against (its
// reference in the same run, the baseline's same configuration and its reference), where they ran,
// their statuses and sums, what they ran differently, and each metric's verdict.
#pragma once

#include <string>
#include <vector>

#include "harness/check/check_metrics.h"
#include "harness/check/check_options.h"
#include "harness/check/check_report.h"
#include "harness/check/configurations.h"

namespace harness {

// The configurations a candidate is compared with. Without --against the references are null;
// without --baseline the baseline's candidate is.
struct Counterparts {
  const Configuration* current_reference = nullptr;
  const Configuration* baseline_candidate = nullptr;
  const Configuration* baseline_reference = nullptr;
};

// The rows of one candidate configuration.
class CandidateComparison {
 public:
  CandidateComparison(const CheckOptions& options, const Configuration& candidate, std::string reference_text,
                      CheckReport& report)
      : options_(options), candidate_(candidate), reference_text_(std::move(reference_text)), report_(report),
        rows_(report.rows) {}

  CheckRow row(Verdict verdict, std::string metric, std::string note) const {
    CheckRow row;
    row.point = candidate_.first_id;
    row.label = candidate_.label;
    row.reference = reference_text_;
    row.settings = to_json(candidate_.settings);
    row.metric = std::move(metric);
    row.verdict = verdict;
    row.note = std::move(note);
    return row;
  }
  void add(Verdict verdict, std::string metric, std::string note) const {
    rows_.push_back(row(verdict, std::move(metric), std::move(note)));
  }

  void compare(const Counterparts& with, bool same_run) const;

 private:
  // False when a failure leaves nothing to compare.
  bool judge_statuses(const Counterparts& with) const;
  // Rows for a comm configuration that sums wrong (#wrong > 0): a regression where what it is held
  // against does not.
  void judge_sums(const Counterparts& with) const;
  // Notes on what the candidate and its reference ran differently: settings (their builds'
  // defaults), and which of each pair ran second.
  void note_differences(const Counterparts& with) const;
  void compare_metric(const CheckMetric& metric, const Counterparts& with, bool same_run) const;
  // False when `other`, a configuration of the baseline, ran on another machine than the candidate
  // (any record of either that says where it ran, failed ones too) and that is not allowed (a row
  // says so); otherwise notes what the report should say about the machines (another machine
  // within the current run is noted here; the pairs split over two nodes are left out before).
  bool same_machine(const Configuration& other, bool baseline_side) const;
  void note(const std::string& line) const;

  const CheckOptions& options_;
  const Configuration& candidate_;
  std::string reference_text_;
  CheckReport& report_;
  std::vector<CheckRow>& rows_;
};

}  // namespace harness
