#include "harness/check/comparison.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/check/candidate_comparison.h"
#include "harness/check/empty_comparison.h"
#include "harness/check/failing_repeats.h"
#include "harness/check/record_places.h"
#include "harness/common/errors.h"
#include "harness/results/result_set.h"
#include "harness/results/results_directory.h"
#include "harness/study/sweep.h"

namespace harness {
namespace fs = std::filesystem;
namespace {

// A row for a file of points/ that is no readable record: its point is unknown, so it is listed.
CheckRow unreadable_row(const std::string& side, const StoredRecord& file) {
  CheckRow row;
  row.point = fs::path(file.path).filename().string();
  row.label = "(" + side + ")";
  row.metric = "all";
  row.verdict = Verdict::kNotComparable;
  row.note = "not a record this harness reads: " + file.problem;
  return row;
}

// A reference value that no configuration has is a typo, not a sweep of missing points.
void check_against_values_occur(const ResultsSide& current, const CheckOptions& options) {
  for (const auto& [key, value] : options.against.items()) {
    std::vector<std::string> seen;
    for (const Configuration& configuration : current.configurations) {
      const std::string text = to_json(configuration.settings)[key].dump();
      if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
    }
    if (std::find(seen.begin(), seen.end(), value.dump()) == seen.end()) {
      throw ConfigError(fmt::format("{}.{}: no configuration of {} has {} (it has {})", options.against_where, key,
                                    current.dir, value.dump(), fmt::join(seen, ", ")));
    }
  }
}

// Finds a candidate's counterparts (its reference in the current run with --against, itself and
// its reference in the baseline with --baseline) and compares it with them; a missing one is a row.
void compare_candidate(const Configuration& whole_candidate, const ResultsSide& current, const ResultsSide* baseline,
                       const CheckOptions& options, const std::string& reference_text, bool same_run,
                       CheckReport& report) {
  const bool against = !options.against.empty();
  // A reference that names the delay must be found with it.
  const bool other_delay = !options.against.contains("inject_comm_delay_us");
  Counterparts with;
  PointSettings counterpart;
  // The repeats whose two points ran on different nodes (a cluster placed them) say nothing of the
  // code: left out of the pairs, unless --allow-other-machine.
  Configuration candidate = whole_candidate;
  Configuration reference;
  std::string left_out;
  if (against) {
    counterpart = with_values(candidate.settings, options.against);
    with.current_reference = current.find(counterpart, &whole_candidate, other_delay);
    if (with.current_reference != nullptr) {
      const std::map<int, std::string> split = split_pairs(candidate, *with.current_reference);
      if (!split.empty()) {
        std::vector<std::string> why;
        for (const auto& [repeat, text] : split) why.push_back(text);
        left_out = fmt::format("{}", fmt::join(why, "; "));
      }
      if (!split.empty() && !options.allow_other_machine) {
        candidate = without_repeats(candidate, split);
        reference = without_repeats(*with.current_reference, split);
        with.current_reference = &reference;
      }
    }
  }
  CandidateComparison comparison(options, candidate, reference_text, report);
  if (!left_out.empty()) {
    const std::string line =
        options.allow_other_machine
            ? fmt::format("{} {}: compared across nodes (--allow-other-machine): {}", candidate.first_id,
                          candidate.label, left_out)
            : fmt::format("{} {}: left out of the comparison, the two points of a pair ran on different nodes: {}",
                          candidate.first_id, candidate.label, left_out);
    if (std::find(report.notes.begin(), report.notes.end(), line) == report.notes.end()) report.notes.push_back(line);
  }
  if (against && with.current_reference == nullptr) {
    comparison.add(Verdict::kMissing, "all", fmt::format("no configuration with {} in {}", reference_text, current.dir));
    return;
  }
  if (!left_out.empty() && !has_records(candidate)) {
    comparison.add(Verdict::kNotComparable, "all",
                   fmt::format("another node in every repeat: {} (--allow-other-machine compares them anyway)",
                               left_out));
    return;
  }
  if (baseline != nullptr) {
    with.baseline_candidate = baseline->find(candidate.settings, nullptr, true);
    if (with.baseline_candidate == nullptr) {
      comparison.add(Verdict::kMissing, "all", fmt::format("not in the baseline {}", baseline->dir));
      return;
    }
    if (against) {
      with.baseline_reference = baseline->find(counterpart, with.baseline_candidate, other_delay);
      if (with.baseline_reference == nullptr) {
        comparison.add(Verdict::kMissing, "all",
                       fmt::format("no configuration with {} in the baseline {}", reference_text, baseline->dir));
        return;
      }
    }
  }
  if (!has_records(candidate)) {
    comparison.add(Verdict::kMissing, "all",
                   candidate.interrupted.empty() ? std::string("no record in the current run (not run, or still running)")
                                                 : "no ok or failed repeat in the current run" + interrupted_text(candidate));
    return;
  }
  comparison.compare(with, same_run);
}

// What the baseline measured that the current run no longer has.
void add_dropped_configurations(const ResultsSide& current, const ResultsSide& baseline, const CheckOptions& options,
                                const std::string& reference_text, CheckReport& report) {
  const bool against = !options.against.empty();
  for (const Configuration& old : baseline.configurations) {
    if (against && is_reference(old.settings, options.against)) continue;
    if (current.find(old.settings, nullptr, true) != nullptr || (old.ok.empty() && old.not_ok.empty())) continue;
    CheckRow row;
    row.point = old.first_id;
    row.label = old.label;
    row.reference = reference_text;
    row.settings = to_json(old.settings);
    row.metric = "all";
    row.verdict = Verdict::kMissing;
    row.note = "in the baseline, not in the current run's experiment";
    report.rows.push_back(std::move(row));
  }
}

// Throws when the rows compare nothing, saying why.
void check_something_compared(const CheckReport& report, const ResultsSide& current, const ResultsSide* baseline,
                              const CheckOptions& options) {
  const std::string why = nothing_compared(report.rows, current, baseline, options);
  if (why.empty()) return;
  const std::size_t unreadable = current.unreadable.size() + (baseline != nullptr ? baseline->unreadable.size() : 0);
  throw ConfigError(fmt::format("nothing compared: {}{}", why,
                                unreadable == 0 ? ""
                                                : fmt::format(" (and {} file(s) in points/ that are no record this "
                                                              "harness reads)",
                                                              unreadable)));
}

}  // namespace

CheckReport compare_results(const ResultsSide& current, const ResultsSide* baseline, const CheckOptions& options,
                            bool strict) {
  const bool against = !options.against.empty();
  if (!against && baseline == nullptr) {
    throw ConfigError("harness check: nothing to compare with: give --baseline DIR, --against VALUES, or a "
                      "\"check\": {\"against\": ...} block in the experiment");
  }
  CheckReport report;
  report.mode = against && baseline ? "against+baseline" : against ? "against" : "baseline";
  report.current_dir = current.dir;
  report.baseline_dir = baseline ? baseline->dir : "";
  report.against = options.against;
  report.strict = strict;
  check_against_values_occur(current, options);
  const bool same_run = baseline != nullptr && baseline->canonical_dir == current.canonical_dir;
  const std::string reference_text = against ? values_text(options.against) : "baseline";

  int candidates = 0;
  for (const Configuration& candidate : current.configurations) {
    if (against && is_reference(candidate.settings, options.against)) continue;
    ++candidates;
    compare_candidate(candidate, current, baseline, options, reference_text, same_run, report);
  }
  if (candidates == 0) {
    throw ConfigError(fmt::format("{}: every configuration of {} has {}: nothing to compare with it",
                                  options.against_where, current.dir, reference_text));
  }
  if (baseline != nullptr) add_dropped_configurations(current, *baseline, options, reference_text, report);
  check_something_compared(report, current, baseline, options);
  if (baseline != nullptr) {
    for (const auto& file : baseline->unreadable) report.rows.push_back(unreadable_row("baseline", file));
  }
  for (const auto& file : current.unreadable) report.rows.push_back(unreadable_row("current run", file));
  sort_rows(report.rows);
  return report;
}

}  // namespace harness
