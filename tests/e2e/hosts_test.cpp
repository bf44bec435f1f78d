// End to end: the local launcher's "hosts" that cannot be used. A host that cannot be reached
// fails its point early, with a reason that says no rank started, rather than at its timeout_s;
// simulated hosts without root are refused before anything is created.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

struct HostRun {
  HarnessRun run;
  double wall_s = 0;
  std::string reason;  // of the one point's record
};

// One comm point of 2 ranks on `hosts`' first host, with at most `timeout_s`.
HostRun run_on_hosts(const fs::path& dir, const std::string& launcher, int timeout_s,
                     const std::vector<std::pair<std::string, std::string>>& environment = {}) {
  const fs::path experiment = write_experiment(
      dir, R"({"name": "hosts", "settings": {"kind": "comm", "ranks": 2, "comm_max_bytes": 4096, "timeout_s": )" +
               std::to_string(timeout_s) + R"(}, "launcher": )" + launcher + "}");
  HostRun result;
  const auto start = std::chrono::steady_clock::now();
  result.run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log", environment);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& entry : fs::directory_iterator(dir / "out" / "points")) {
    // The record, not a rank's measurements beside it (p000-....measurements.json).
    if (entry.path().extension() == ".json" && entry.path().stem().extension().empty())
      result.reason = read_json_file(entry.path().string())["reason"];
  }
  return result;
}

// A script as `dir`/bin/ssh, first on the PATH the harness (and so mpirun) is given.
std::vector<std::pair<std::string, std::string>> with_ssh(const fs::path& dir, const std::string& script) {
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin" / "ssh") << "#!/bin/sh\n" << script;
  fs::permissions(dir / "bin" / "ssh", fs::perms::owner_all);
  return {{"PATH", (dir / "bin").string() + ":" + std::getenv("PATH")}};
}

// A name that cannot resolve (.invalid, RFC 2606): ssh says so at once; the reason says that no
// rank started and what ssh said, not only Open MPI's list of what usually causes it.
TEST(Hosts, AHostThatDoesNotResolveFailsItsPointSayingNoRankStarted) {
  if (find_program("ssh").empty()) GTEST_SKIP() << "no ssh: mpirun reaches hosts through it";
  const fs::path dir = scratch("host_unresolved");
  const HostRun host = run_on_hosts(dir, R"({"name": "local", "hosts": ["harness-no-such-host.invalid"]})", 120);
  EXPECT_EQ(host.run.outcome.exit_code, 1) << joined(host.run.output);
  EXPECT_LT(host.wall_s, 60) << joined(host.run.output);
  // (Open MPI gives ssh the name without its domain.)
  EXPECT_NE(host.reason.find("no rank started: mpirun could not start its daemon on every host (the remote shell "
                             "said: ssh: Could not resolve hostname harness-no-such-host"),
            std::string::npos)
      << host.reason;
}

// A host that does not answer: ssh waits as long as TCP does (here more than the 700 s it was
// given), unless given a connect timeout, which the launcher gives it. This ssh stands for one
// that reaches nothing: it fails as ssh does at its ConnectTimeout, and without one never ends.
TEST(Hosts, AHostThatDoesNotAnswerFailsItsPointLongBeforeItsTimeout) {
  const fs::path dir = scratch("host_silent");
  const auto path =
      with_ssh(dir,
               "case \"$*\" in *ConnectTimeout=*BatchMode=yes*)\n"
               "  echo \"ssh: connect to host silent-host port 22: Connection timed out\" >&2; exit 255;;\n"
               "esac\nexec sleep 600\n");
  const HostRun host = run_on_hosts(dir, R"({"name": "local", "hosts": ["silent-host"]})", 60, path);
  EXPECT_EQ(host.run.outcome.exit_code, 1) << joined(host.run.output);
  EXPECT_LT(host.wall_s, 30) << joined(host.run.output);
  EXPECT_NE(host.reason.find("no rank started: mpirun could not start its daemon on every host"), std::string::npos)
      << host.reason;
  EXPECT_NE(host.reason.find("Connection timed out"), std::string::npos) << host.reason;
}

// Where the user chose mpirun's remote shell, the launcher leaves it alone; a point whose ranks
// never start then runs to its timeout_s, and its reason says that none started.
TEST(Hosts, APointWhoseRanksNeverStartSaysSoWhenItTimesOut) {
  const fs::path dir = scratch("host_hangs");
  const auto path = with_ssh(dir, "exec sleep 600\n");
  const HostRun host =
      run_on_hosts(dir,
                   R"({"name": "local", "hosts": ["silent-host"], "mpirun_args": ["--mca", "plm_rsh_agent", ")" +
                       (dir / "bin" / "ssh").string() + R"("]})",
                   3, path);
  EXPECT_EQ(host.run.outcome.exit_code, 1) << joined(host.run.output);
  EXPECT_NE(host.reason.find("timed out after the 3 s limit; no rank started (none of the 2 reached the end of "
                             "MPI_Init): the launcher did not start them, or they could not reach each other"),
            std::string::npos)
      << host.reason;
}

// Simulated hosts are UTS namespaces, which only root may make: as another user, `harness run`
// exits 2 (bad input, as too many ranks would be) with the reason, before anything is created.
TEST(Hosts, SimulatedHostsWithoutRootExitTwoWithTheReason) {
  if (::geteuid() != 0 || find_program("setpriv").empty()) GTEST_SKIP() << "needs root and setpriv to be another user";
  const fs::path dir = scratch("simulated_not_root");
  const fs::path experiment =
      write_experiment(dir, R"({"name": "s", "settings": {"kind": "comm", "ranks": 2, "nodes": 2},
               "launcher": {"name": "local", "hosts": ["nodea", "nodeb"], "simulate_hosts": true}})");
  ProcessRequest request = harness_request({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "log");
  request.argv.insert(request.argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  const ProcessOutcome outcome = run_process(request);
  const auto output = tail_lines((dir / "log").string(), 100);
  EXPECT_EQ(outcome.exit_code, 2) << joined(output);
  ASSERT_EQ(output.size(), 1U) << joined(output);
  EXPECT_NE(output[0].find("launcher.simulate_hosts: simulated hosts need root"), std::string::npos) << output[0];
  EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace harness::e2e
