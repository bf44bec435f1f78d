// The harness's job script template (slurm/job.sh.in) run by bash, without SLURM: what its
// setup lines may do, and what a point's status file says whenever a signal comes.
// Its rendering and the status files of stopped jobs: slurm_script_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/launch/slurm_follow.h"
#include "harness/launch/slurm_script.h"
#include "tests/common/read_text.h"

namespace harness {
namespace {
namespace fs = std::filesystem;

// A job of one point, `command`, whose status file is DIR/point.status; the rendered script.
std::string one_point_script(const fs::path& dir, const std::vector<std::string>& command,
                             const std::vector<std::string>& setup = {}) {
  JobScript script;
  script.mode = SlurmMode::kPerPoint;
  script.status_dir = dir.string();
  script.setup = setup;
  ScriptPoint point;
  point.id = "point";
  point.threads = 1;
  point.time_limit_s = 60;
  point.measurements_path = (dir / "m").string();
  point.log_path = (dir / "point.log").string();
  point.command = command;
  script.points = {point};
  return render_job_script(load_job_template("", "launcher.template"), script);
}

ProcessOutcome run_script(const fs::path& dir, const std::string& text) {
  write_file_atomically((dir / "job.sh").string(), text);
  ProcessRequest request;
  request.argv = {"bash", (dir / "job.sh").string()};
  request.log_path = (dir / "job.out").string();
  request.timeout_s = 60;
  return run_process(request);
}

fs::path template_scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("harness_slurm_job_template_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Site scripts sourced by setup (module load) read variables nobody set; under the script's
// set -u that ended the job before its point, without a word in the point's files.
TEST(SlurmJobTemplate, SetupLinesMayReadUnsetVariables) {
  const fs::path dir = template_scratch("setup");
  const ProcessOutcome outcome = run_script(
      dir, one_point_script(dir, {"true"}, {"echo \"site: ${HARNESS_TEST_SURELY_UNSET_VARIABLE}\""}));
  EXPECT_TRUE(outcome.ok()) << read_text(dir / "job.out");
  const PointStatusFile status = read_status_file((dir / "point.status").string());
  EXPECT_TRUE(status.finished) << read_text(dir / "job.out");
  EXPECT_EQ(status.exit_code, 0);
}

// A TERM (scancel, the time limit) that comes after the ranks ended but before their finished
// line: the line says how they ended, not that the signal stopped them.
TEST(SlurmJobTemplate, ATermAfterTheRanksEndedKeepsTheirExitStatus) {
  const fs::path dir = template_scratch("late_term");
  for (const int ranks_exit : {0, 3}) {
    std::string text = one_point_script(dir, {"bash", "-c", "exit " + std::to_string(ranks_exit)});
    // The signal comes right as the wait for the ranks returns.
    const std::string waited = "  wait \"$running_child\"\n  local code=$?\n";
    const std::string::size_type at = text.find(waited);
    ASSERT_NE(at, std::string::npos) << text;
    text.insert(at + waited.find('\n') + 1, "  kill -TERM $$\n");
    fs::remove(dir / "point.status");
    const ProcessOutcome outcome = run_script(dir, text);
    EXPECT_EQ(outcome.exit_code, 143) << read_text(dir / "job.out");
    const PointStatusFile status = read_status_file((dir / "point.status").string());
    EXPECT_TRUE(status.finished) << read_text(dir / "point.status");
    EXPECT_EQ(status.exit_code, ranks_exit) << read_text(dir / "point.status");
  }
}

}  // namespace
}  // namespace harness
