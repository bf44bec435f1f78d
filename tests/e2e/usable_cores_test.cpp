// End to end: the cores the harness counts are those its ranks can use, under the real mechanisms
// that take some away: an affinity mask (taskset) and a cgroup CPU quota (a cgroup of the test's
// own, cgroup v2 or v1, where root may make one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/common/usable_cpus.h"

namespace harness::e2e {
namespace {

// Two points of the Iris MLP, 1 and 2 ranks, threads left to the launcher.
constexpr const char* kOneAndTwoRanks =
    R"({"name": "cores", "settings": {"workload": "iris_mlp", "epochs": 1}, "sweep": {"ranks": [1, 2]}})";

// The line of a dry run's output that holds point `id`'s command.
std::string command_of(const std::vector<std::string>& output, const std::string& id) {
  for (std::size_t i = 0; i + 1 < output.size(); ++i) {
    if (output[i].find(id) != std::string::npos) return output[i + 1];
  }
  return "";
}

// The harness under `prefix` (a command that runs the rest of its arguments).
HarnessRun run_under(const std::vector<std::string>& prefix, const std::vector<std::string>& arguments,
                     const fs::path& log) {
  ProcessRequest request = harness_request(arguments, log);
  request.argv.insert(request.argv.begin(), prefix.begin(), prefix.end());
  HarnessRun run;
  run.outcome = run_process(request);
  run.output = tail_lines(log.string(), 1000);
  return run;
}

TEST(UsableCores, AnAffinityMaskOfOneCpuIsOneCore) {
  if (usable_cpus().cpus.size() < 2) GTEST_SKIP() << "one CPU here: nothing for a mask to take away";
  if (find_program("taskset").empty()) GTEST_SKIP() << "taskset not found (util-linux)";
  const int cpu = usable_cpus().cpus.front();
  const fs::path dir = scratch("cores_affinity");
  const fs::path experiment = write_experiment(dir, kOneAndTwoRanks);
  const HarnessRun run =
      run_under({"taskset", "-c", std::to_string(cpu)}, {"run", experiment.string(), "--dry-run"}, dir / "log");
  ASSERT_EQ(run.outcome.exit_code, 0) << joined(run.output);
  const std::string output = joined(run.output);
  // One rank gets one thread, two ranks share the core (and mpirun is told it may).
  EXPECT_NE(command_of(run.output, "p000-").find("HARNESS_THREADS_PER_RANK=1 "), std::string::npos) << output;
  EXPECT_NE(command_of(run.output, "p001-").find(" --oversubscribe "), std::string::npos) << output;
  EXPECT_NE(output.find(fmt::format("warning: oversubscribed: 1 point(s) run more rank threads than this machine's 1 "
                                    "core (affinity mask: CPU {} of ",
                                    cpu)),
            std::string::npos)
      << output;
}

// A cgroup of the test's own with a CPU quota, where root may make one: cgroup v2 (the cpu
// controller enabled for the root's children) or v1's cpu hierarchy. Removed when it goes.
class QuotaCgroup {
 public:
  QuotaCgroup(const std::string& name, double cpus) {
    if (::geteuid() != 0) {
      why_not_ = "not root";
      return;
    }
    const std::string mountinfo = read_text("/proc/self/mountinfo");
    std::istringstream lines(mountinfo);
    std::string line;
    std::optional<fs::path> v2;
    std::optional<fs::path> v1;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::vector<std::string> parts;
      for (std::string field; fields >> field;) parts.push_back(field);
      // ID PARENT DEVICE ROOT MOUNT-POINT OPTIONS ... - TYPE SOURCE SUPER-OPTIONS
      const auto dash = std::find(parts.begin(), parts.end(), "-");
      if (parts.size() < 5 || parts[3] != "/" || parts.end() - dash < 4) continue;
      if (dash[1] == "cgroup2") v2 = parts[4];
      if (dash[1] == "cgroup" && ("," + dash[3] + ",").find(",cpu,") != std::string::npos) v1 = parts[4];
    }
    constexpr long period = 100000;
    const auto quota = static_cast<long>(cpus * period);
    if (v2 && read_text(*v2 / "cgroup.controllers").find("cpu") != std::string::npos) {
      std::ofstream(*v2 / "cgroup.subtree_control") << "+cpu";
      if (make(*v2 / name) && write(directory_ / "cpu.max", fmt::format("{} {}", quota, period))) return;
      remove();
    }
    if (v1 && make(*v1 / name) && write(directory_ / "cpu.cfs_period_us", std::to_string(period)) &&
        write(directory_ / "cpu.cfs_quota_us", std::to_string(quota))) {
      return;
    }
    remove();
    why_not_ = "no cgroup with a cpu controller that root may add to here";
  }
  ~QuotaCgroup() { remove(); }
  QuotaCgroup(const QuotaCgroup&) = delete;
  QuotaCgroup& operator=(const QuotaCgroup&) = delete;

  const std::string& why_not() const { return why_not_; }
  // What runs a command inside it: a shell that moves itself in, then becomes the command.
  std::vector<std::string> prefix() const {
    return {"sh", "-c", "echo $$ > '" + (directory_ / "cgroup.procs").string() + "' && exec \"$@\"", "sh"};
  }

 private:
  bool make(const fs::path& directory) {
    std::error_code error;
    fs::remove(directory, error);  // a killed test's
    if (!fs::create_directory(directory, error)) return false;
    directory_ = directory;
    return true;
  }
  static bool write(const fs::path& file, const std::string& text) {
    std::ofstream out(file);
    out << text;
    out.close();
    return !out.fail();
  }
  void remove() {
    if (directory_.empty()) return;
    std::error_code error;
    fs::remove(directory_, error);  // rmdir: its processes have ended
    directory_.clear();
  }

  fs::path directory_;
  std::string why_not_;
};

// docker --cpus=1, a Kubernetes limit of 1 CPU: every CPU is in the mask, but the ranks share one
// CPU's worth of time. Before a point (the launcher's threads and warning) and in its record (what
// the ranks found).
TEST(UsableCores, ACgroupCpuQuotaOfOneCpuIsOneCore) {
  if (usable_cpus().cores() < 2) GTEST_SKIP() << "one core here: a quota of one takes nothing away";
  const QuotaCgroup cgroup("harness_usable_cores_test", 1.0);
  if (!cgroup.why_not().empty()) GTEST_SKIP() << cgroup.why_not();
  const fs::path dir = scratch("cores_quota");
  const fs::path experiment = write_experiment(dir, kOneAndTwoRanks);
  const HarnessRun dry = run_under(cgroup.prefix(), {"run", experiment.string(), "--dry-run"}, dir / "dry.log");
  ASSERT_EQ(dry.outcome.exit_code, 0) << joined(dry.output);
  const std::string output = joined(dry.output);
  EXPECT_NE(command_of(dry.output, "p000-").find("HARNESS_THREADS_PER_RANK=1 "), std::string::npos) << output;
  EXPECT_NE(output.find("warning: oversubscribed: 1 point(s) run more rank threads than this machine's 1 core "
                        "(cgroup CPU quota of 1 CPU ("),
            std::string::npos)
      << output;

  const fs::path out = dir / "out";
  const HarnessRun run =
      run_under(cgroup.prefix(), {"run", experiment.string(), "--out", out.string()}, dir / "run.log");
  ASSERT_EQ(run.outcome.exit_code, 0) << explained(run);
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].at("oversubscribed"), "");
  EXPECT_EQ(rows[1].at("oversubscribed"), "2 ranks × 1 thread on 1 core");
  const Json record = read_json_file((out / "points" / (rows[1].at("id") + ".json")).string());
  EXPECT_EQ(record["measurements"]["oversubscribed"]["cores"], 1);
}

}  // namespace
}  // namespace harness::e2e
