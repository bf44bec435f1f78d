// `harness check`: compares a results directory with a baseline and/or with configurations of its
// own, prints the verdicts, writes the CI outputs, and exits with the gate's status.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/check/check_outputs.h"
#include "harness/check/comparison.h"
#include "harness/check/expected_commits.h"
#include "harness/cli/commands.h"
#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/text.h"
#include "harness/study/json_document.h"
#include "harness/results/results_directory.h"

namespace harness {
namespace {

CheckOptions options_for(const ResultsSide& current, const CheckCommandOptions& command) {
  CheckOptions options = default_check_options();
  if (!current.experiment.check.empty()) {
    apply_check_block(options, current.experiment.check, current.dir + "/experiment.json: check");
  }
  if (!command.against.empty()) {
    const Json values = Json::parse(command.against, nullptr, false);
    if (values.is_discarded()) {
      throw ConfigError(fmt::format("--against: expected a JSON object of setting values such as "
                                    "'{{\"backend\": \"allreduce\"}}', got {}",
                                    describe_text(shortened(command.against, 80))));
    }
    parse_json_document(command.against, "--against");  // refuses a key given twice
    options.against = read_against(values, "--against");
    options.against_where = "--against";
  }
  for (const auto& argument : command.thresholds) apply_threshold_argument(options, argument);
  for (const auto& argument : command.floors) apply_floor_argument(options, argument);
  if (!command.metrics.empty()) select_metrics(options, command.metrics);
  options.allow_other_machine = command.allow_other_machine;
  options.allow_other_mpi = command.allow_other_mpi;
  return options;
}

void write_output(const std::string& path, const std::string& text, const char* flag) {
  try {
    write_file_atomically(path, text);
  } catch (const Error& error) {
    throw ConfigError(fmt::format("{}: {}", flag, error.what()));
  }
}

// An output that cannot be written is bad input, found before anything is compared or printed.
// An output is a new file or a regular one to replace: never a link (/proc/self/fd/1), a device
// (/dev/null) or a FIFO, which replacing would destroy, nor a file of the results compared.
void check_output_path(const std::string& path, const char* flag, const std::vector<std::string>& results_dirs) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(fs::symlink_status(path, error))) throw ConfigError(fmt::format("{} {}: is a directory", flag, path));
  try {
    require_replaceable_file(path, "a new file or a regular file to replace");
  } catch (const Error& refused) {
    throw ConfigError(fmt::format("{} {}", flag, refused.what()));
  }
  const fs::path parent = fs::absolute(path).parent_path();
  if (!fs::is_directory(parent, error)) {
    throw ConfigError(fmt::format("{} {}: no directory {} to write it in", flag, path, parent.string()));
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    throw ConfigError(fmt::format("{} {}: cannot write in {}: {}", flag, path, parent.string(), std::strerror(errno)));
  }
  const fs::path output = fs::canonical(parent, error) / fs::path(path).filename();
  for (const auto& directory : results_dirs) {
    if (directory.empty()) continue;
    const fs::path results = fs::canonical(directory, error);
    if (error) continue;  // loading it says what is wrong
    if (ResultsDirectory::written_by_harness(output.lexically_relative(results).string())) {
      throw ConfigError(fmt::format("{} {}: is a file of the results directory {} that the harness writes; "
                                    "choose a path outside its own files",
                                    flag, path, directory));
    }
  }
}

// Two outputs named one file: the second would replace the first.
void check_outputs_distinct(const CheckCommandOptions& command) {
  namespace fs = std::filesystem;
  const std::vector<std::pair<const char*, std::string>> outputs = {
      {"--json", command.json_path}, {"--junit", command.junit_path}, {"--markdown", command.markdown_path}};
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[i].second.empty() || outputs[j].second.empty()) continue;
      std::error_code error;
      if (fs::weakly_canonical(outputs[i].second, error) == fs::weakly_canonical(outputs[j].second, error)) {
        throw ConfigError(fmt::format("{} {}: is also {}'s file; expected a file of its own", outputs[j].first,
                                      outputs[j].second, outputs[i].first));
      }
    }
  }
}

int check(const CheckCommandOptions& command) {
  const std::vector<std::string> compared = {command.current_dir, command.baseline_dir};
  check_output_path(command.json_path, "--json", compared);
  check_output_path(command.junit_path, "--junit", compared);
  check_output_path(command.markdown_path, "--markdown", compared);
  check_outputs_distinct(command);
  std::vector<ExpectedCommit> expected_commits;
  for (const auto& argument : command.expect_commits) expected_commits.push_back(read_expected_commit(argument));
  const ResultsSide current = load_results_side(command.current_dir);
  for (const auto& expected : expected_commits) check_expected_commit(current, expected);
  const CheckOptions options = options_for(current, command);
  std::optional<ResultsSide> baseline;
  if (!command.baseline_dir.empty()) baseline = load_results_side(command.baseline_dir);
  const CheckReport report = compare_results(current, baseline ? &*baseline : nullptr, options, command.strict);

  // The files first: one that cannot be written after all is an error (exit 2) before any verdict
  // is printed, not after the table.
  if (!command.json_path.empty()) write_output(command.json_path, check_report_json(report).dump(2) + "\n", "--json");
  if (!command.junit_path.empty()) write_output(command.junit_path, check_junit_xml(report), "--junit");
  if (!command.markdown_path.empty()) write_output(command.markdown_path, check_markdown(report), "--markdown");
  std::cout << format_check_console(report);
  if (const char* actions = std::getenv("GITHUB_ACTIONS"); actions != nullptr && std::string(actions) == "true") {
    for (const auto& line : github_annotations(report)) std::cout << line << "\n";
  }

  const int status = report.exit_status();
  const int inconclusive = report.count(Verdict::kInconclusive);
  const int unmatched = report.count(Verdict::kMissing) + report.count(Verdict::kFailed) +
                        report.count(Verdict::kNotComparable);
  if (status == kCheckRegression) {
    std::cout << fmt::format("harness check: {} regression(s): exit 1\n", report.count(Verdict::kRegression));
  } else if (!command.strict && (inconclusive > 0 || unmatched > 0)) {
    std::cout.flush();
    std::cerr << fmt::format("harness check: warning: {} inconclusive and {} missing, failing or not comparable "
                             "row(s); exit 0 (--strict would exit {})\n",
                             inconclusive, unmatched, unmatched > 0 ? kCheckMissing : kCheckInconclusive);
  }
  return status;
}

}  // namespace

int check_command(const CheckCommandOptions& command) {
  try {
    return check(command);
  } catch (const std::exception& error) {
    // Every error of a check is about its input (it runs nothing), and none may look like a
    // regression (exit 1) to a CI system.
    std::cout.flush();
    std::cerr << "harness: " << error.what() << "\n";
    return kCheckUsage;
  }
}

}  // namespace harness
