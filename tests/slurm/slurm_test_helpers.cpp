#include "slurm_test_helpers.h"

#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/common/text.h"

namespace harness::e2e {

int run_command(const std::vector<std::string>& argv, const fs::path& log) {
  ProcessRequest request;
  request.argv = argv;
  request.log_path = log.string();
  request.timeout_s = 120;
  const ProcessOutcome outcome = run_process(request);
  return outcome.exited ? outcome.exit_code : -1;
}

int run_cluster_script(const std::vector<std::string>& arguments, const fs::path& log) {
  std::vector<std::string> argv = {"bash", std::string(HARNESS_SOURCE_DIR) + "/slurm/local-cluster.sh"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  argv.emplace_back(HARNESS_SLURM_DIR);
  // This process adopts orphans while it is a subreaper (process.h) and stops them when a child
  // ends; daemons started now must go to init instead.
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  const int status = std::system((shell_quoted(argv) + " > " + shell_quoted({log.string()}) + " 2>&1").c_str());
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<Json> records(const fs::path& out) {
  std::vector<Json> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out / "points", error)) {
    if (entry.path().extension() == ".json") found.push_back(read_json_file(entry.path().string()));
  }
  std::sort(found.begin(), found.end(), [](const Json& a, const Json& b) { return a["id"] < b["id"]; });
  return found;
}

}  // namespace harness::e2e
