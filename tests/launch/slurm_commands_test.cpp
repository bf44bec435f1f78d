// The SLURM commands as the launcher runs them, against fake ones first on PATH: what sbatch is
// given and what its answer means.
#include "harness/launch/slurm_commands.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/common/errors.h"
#include "tests/common/read_text.h"

namespace harness {
namespace {
namespace fs = std::filesystem;

// A folder whose fake `program` (a bash script's body) comes first on PATH while it lives.
class FakeCommands {
 public:
  explicit FakeCommands(const std::string& name)
      : dir_(fs::temp_directory_path() / ("harness_slurm_commands_" + name)),
        path_(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin") {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::setenv("PATH", (dir_.string() + ":" + path_).c_str(), 1);
  }
  ~FakeCommands() { ::setenv("PATH", path_.c_str(), 1); }
  FakeCommands(const FakeCommands&) = delete;
  FakeCommands& operator=(const FakeCommands&) = delete;

  void add(const std::string& program, const std::string& body) const {
    std::ofstream(dir_ / program) << "#!/bin/bash\nout=" << dir_.string() << "\n" << body << "\n";
    fs::permissions(dir_ / program, fs::perms::owner_all);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::string path_;
};

std::string submit_error(const SlurmCommands& commands) {
  try {
    commands.submit({}, "job.sh");
  } catch (const LaunchError& error) {
    return error.what();
  }
  return "";
}

TEST(SlurmCommands, AJobQueuedOnAnotherClusterIsCancelledThereAndAnError) {
  const FakeCommands fake("cluster");
  fake.add("sbatch", "echo '1001;other'");
  fake.add("scancel", "echo \"$*\" >> \"$out/scancel_calls\"");
  const SlurmCommands commands(fake.dir().string());
  EXPECT_EQ(submit_error(commands),
            "sbatch job.sh: job 1001 was queued on cluster other, where the harness cannot follow it (cancelled): "
            "expected a job id without \";cluster\" (no --clusters, SBATCH_CLUSTERS or SLURM_CLUSTERS)");
  EXPECT_EQ(read_text(fake.dir() / "scancel_calls"), "--clusters=other 1001\n");
  // The cluster's own: the id alone, after any warning.
  fake.add("sbatch", "echo 'sbatch: warning: something'; echo 1002");
  EXPECT_EQ(commands.submit({}, "job.sh"), "1002");
}

// SLURM documents its input variables as beating #SBATCH lines: none reaches sbatch, so that the
// job's name, requeue and environment are the script's.
TEST(SlurmCommands, SbatchGetsNoneOfSlurmsInputVariables) {
  const FakeCommands fake("environment");
  fake.add("sbatch", "env | grep -E '^(SBATCH_|SLURM_)' | sort > \"$out/environment\"; echo 1003");
  const std::vector<std::pair<std::string, std::string>> variables = {
      {"SBATCH_JOB_NAME", "mine"}, {"SBATCH_REQUEUE", "1"}, {"SBATCH_TIMELIMIT", "5"},
      {"SLURM_EXPORT_ENV", "NONE"}, {"SLURM_CLUSTERS", "other"}, {"SLURM_CONF", "/etc/slurm/slurm.conf"}};
  for (const auto& [name, value] : variables) ::setenv(name.c_str(), value.c_str(), 1);
  const std::string id = SlurmCommands(fake.dir().string()).submit({}, "job.sh");
  for (const auto& [name, value] : variables) ::unsetenv(name.c_str());
  EXPECT_EQ(id, "1003");
  // Only what says where the cluster is, and the launcher's own time format.
  EXPECT_EQ(read_text(fake.dir() / "environment"), "SLURM_CONF=/etc/slurm/slurm.conf\nSLURM_TIME_FORMAT=standard\n");
}

}  // namespace
}  // namespace harness
