// End to end: files of a results directory that someone replaced with symbolic links (a record,
// experiment.json, the job ledger) are refused by every command that reads them (plot, status,
// check, run) in one line that names the link, and no byte of the link's target is read or shown.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "e2e_helpers.h"

namespace harness::e2e {
namespace {

// What the target holds: a JSON string's start, so that a parser reading it quotes it back.
constexpr const char* kSecret = "\"SECRET_TOKEN=hunter2-must-not-be-shown\n";

// A copy of the finished results directory `out` as DIR/NAME, with `file` in it replaced by a link to
// `target`.
fs::path linked_copy(const fs::path& out, const fs::path& dir, const std::string& name, const fs::path& file,
                     const fs::path& target) {
  const fs::path copy = dir / name;
  fs::copy(out, copy, fs::copy_options::recursive);
  fs::create_directories((copy / file).parent_path());
  fs::remove(copy / file);
  fs::create_symlink(target, copy / file);
  return copy;
}

// Runs the harness and checks that its output names the link and holds nothing of the target.
void expect_refused_without_target(const std::vector<std::string>& arguments, const fs::path& log) {
  SCOPED_TRACE(arguments[0] + " " + arguments[1]);
  const HarnessRun run = run_harness(arguments, log);
  const std::string output = joined(run.output);
  EXPECT_EQ(output.find("SECRET"), std::string::npos) << output;
  EXPECT_EQ(output.find("hunter2"), std::string::npos) << output;
  EXPECT_NE(output.find("is a symbolic link"), std::string::npos) << output;
}

TEST(RecordLinks, ALinkedRecordExperimentOrLedgerIsRefusedAndNoByteOfItsTargetShown) {
  const fs::path dir = scratch("record_links");
  // Two points: `check` compares one and lists the linked record of the other.
  const fs::path experiment = write_experiment(dir, R"({"name": "linked", "settings": {"workload": "iris_mlp",
    "engine": "blas", "epochs": 1, "threads_per_rank": 1}, "sweep": {"batch_size": [4, 8]}})");
  const fs::path out = dir / "out";
  const HarnessRun first = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "run.log");
  ASSERT_EQ(first.outcome.exit_code, 0) << explained(first);
  const fs::path secret = dir / "notes.txt";  // world-readable, named like nothing private
  std::ofstream(secret) << kSecret;
  fs::path record;
  for (const auto& entry : fs::directory_iterator(out / "points")) record = fs::relative(entry.path(), out);
  ASSERT_FALSE(record.empty());

  const fs::path with_record = linked_copy(out, dir, "record", record, secret);
  for (const std::string command : {"plot", "status"}) {
    expect_refused_without_target({command, with_record.string()}, dir / (command + "-record.log"));
  }
  expect_refused_without_target({"check", with_record.string(), "--baseline", out.string()}, dir / "check-record.log");
  expect_refused_without_target({"run", experiment.string(), "--out", with_record.string()}, dir / "run-record.log");
  EXPECT_TRUE(fs::is_symlink(with_record / (record.string() + ".unreadable"))) << "run did not set the link aside";

  const fs::path with_experiment = linked_copy(out, dir, "experiment", "experiment.json", secret);
  for (const std::string command : {"plot", "status"}) {
    expect_refused_without_target({command, with_experiment.string()}, dir / (command + "-experiment.log"));
  }
  expect_refused_without_target({"check", out.string(), "--baseline", with_experiment.string()},
                                dir / "check-experiment.log");

  const fs::path with_ledger = linked_copy(out, dir, "ledger", fs::path("jobs") / "ledger.json", secret);
  expect_refused_without_target({"status", with_ledger.string()}, dir / "status-ledger.log");
  expect_refused_without_target({"run", experiment.string(), "--out", with_ledger.string()}, dir / "run-ledger.log");

  EXPECT_EQ(read_text(secret), kSecret) << "the link's target was written";
}

}  // namespace
}  // namespace harness::e2e
