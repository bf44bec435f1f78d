#include "harness/results/results_directory.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/common/errors.h"
#include "tests/common/scratch_dir.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

fs::path results_scratch(const std::string& name) { return empty_scratch_dir("results_directory_test_" + name); }

TEST(DirectoryLock, AFileSystemWithoutLocksIsNotCalledInUse) {
  for (const int error : {ENOLCK, ENOSYS}) {
    const std::string message = lock_failure_message("out", error, "");
    EXPECT_EQ(message.rfind("--out out: its file system does not support file locks (flock: ", 0), 0U) << message;
    EXPECT_NE(message.find(std::strerror(error)), std::string::npos) << message;
    EXPECT_EQ(message.find("in use"), std::string::npos) << message;
  }
}

TEST(DirectoryLock, ADirectoryInUseNamesItsHolder) {
  EXPECT_EQ(lock_failure_message("out", EWOULDBLOCK, "pid 7 on host since T: harness run x.json"),
            "--out out: in use by another harness run (pid 7 on host since T: harness run x.json); wait for it to "
            "finish or choose another directory");
  EXPECT_NE(lock_failure_message("out", EWOULDBLOCK, "").find("its process did not say which"), std::string::npos);
  EXPECT_EQ(lock_failure_message("out", EIO, ""), "--out out: cannot lock out/.lock: " + std::string(std::strerror(EIO)));
}

TEST(DirectoryLock, ALockFileThatIsALinkIsRefusedAndItsTargetKept) {
  const fs::path dir = results_scratch("lock_link");
  const fs::path target = dir / "precious.txt";
  std::ofstream(target) << "precious\n";
  fs::create_directories(dir / "out");
  fs::create_symlink(target, dir / "out" / ".lock");
  const ResultsDirectory directory((dir / "out").string());
  EXPECT_THROW(DirectoryLock(directory, {"harness", "run"}), ConfigError);
  std::ifstream in(target);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "precious\n");
}

TEST(ResultsDirectory, KnowsTheFilesTheHarnessWrites) {
  for (const char* path : {"experiment.json", "summary.csv", "stats.csv", "report.html", ".lock", "points/p000-ab.json",
                           "plots/speedup.svg", "logs/p000-ab.log", "jobs/ledger.json", "./points/../summary.csv"}) {
    EXPECT_TRUE(ResultsDirectory::written_by_harness(path)) << path;
  }
  for (const char* path : {"check.json", "junit.xml", "../experiment.json", "notes/summary.csv", ""}) {
    EXPECT_FALSE(ResultsDirectory::written_by_harness(path)) << path;
  }
}

// What a run that stopped before writing experiment.json left (the lock and its empty folders)
// is taken again; a folder with anything else in it is not.
TEST(ResultsDirectory, ARunsEmptySkeletonIsReusableAndAnythingMoreIsNot) {
  const fs::path dir = results_scratch("skeleton");
  const ResultsDirectory directory(dir.string());
  directory.create();
  std::ofstream(directory.lock_file()) << "pid 1 on vm since then: harness run x.json\n";
  fs::create_directories(directory.jobs_dir());
  EXPECT_NO_THROW(directory.check_reusable_for("x"));
  std::ofstream(directory.logs_dir() + "/p000-ab.log") << "a run's output\n";
  EXPECT_THROW(directory.check_reusable_for("x"), ConfigError);
  fs::remove(directory.logs_dir() + "/p000-ab.log");
  std::ofstream(dir / "notes.txt") << "mine\n";
  EXPECT_THROW(directory.check_reusable_for("x"), ConfigError);
}

TEST(ResultsDirectory, ListsEveryRunsMeasurementsOfAPoint) {
  const fs::path dir = results_scratch("measurements");
  const ResultsDirectory directory(dir.string());
  fs::create_directories(directory.logs_dir());
  for (const std::string_view name : {"p000-ab.1-1.measurements.json", "p000-ab.2-2.measurements.json", "p000-ab.log",
                                  "p000-ab.trace.json", "p001-cd.1-1.measurements.json"}) {
    std::ofstream(directory.logs_dir() + "/" + std::string(name)) << "{}";
  }
  EXPECT_EQ(directory.measurements_files("p000-ab"),
            (std::vector<std::string>{directory.measurements_path("p000-ab", "1-1"),
                                      directory.measurements_path("p000-ab", "2-2")}));
}

}  // namespace
}  // namespace harness
