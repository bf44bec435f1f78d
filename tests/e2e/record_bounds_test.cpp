// End to end: a record in points/ that is too large, nested too deep or made of tiny values is a
// damaged record like a truncated one, for every command that reads records (plot, status, check,
// a resuming run): one line naming the file and the bound, no crash, and memory within a small
// multiple of the file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "e2e_helpers.h"
#include "harness/common/bounded_json.h"
#include "harness/common/files.h"

namespace harness::e2e {
namespace {

// A run of two short points, made once; each test damages a copy.
const fs::path& intact_results() {
  static const fs::path out = [] {
    const fs::path dir = scratch("record_bounds");
    const fs::path experiment = write_experiment(
        dir, R"({"name": "bounds", "settings": {"workload": "iris_mlp", "epochs": 2, "threads_per_rank": 1},
                 "sweep": {"batch_size": [4, 8]}})");
    const HarnessRun run = run_harness({"run", experiment.string(), "--out", (dir / "out").string()}, dir / "run.log");
    EXPECT_TRUE(run.outcome.ok()) << joined(run.output);
    return dir / "out";
  }();
  return out;
}

struct Damaged {
  fs::path dir;     // a copy of the intact results
  fs::path record;  // its damaged record
};

// A copy of the intact results whose first record `damage` changes.
Damaged damaged_copy(const std::string& name, const std::function<void(const fs::path&)>& damage) {
  Damaged copy;
  copy.dir = scratch("record_bounds_" + name) / "out";
  fs::copy(intact_results(), copy.dir, fs::copy_options::recursive);
  fs::remove(copy.dir / ".lock");
  for (const auto& entry : fs::directory_iterator(copy.dir / "points")) {
    if (copy.record.empty() || entry.path() < copy.record) copy.record = entry.path();
  }
  damage(copy.record);
  return copy;
}

// The record with `field` (JSON text) added first: still valid JSON, as a hostile edit would be.
void add_field(const fs::path& record, const std::string& field) {
  const std::string text = read_json_file(record.string()).dump(1);
  std::ofstream(record, std::ios::trunc) << "{\"extra\": " << field << ", " << text.substr(1);
}

struct Measured {
  int exit_code = -1;
  int signal = 0;
  long max_rss_kib = 0;
  std::vector<std::string> output;
};

// The harness with `arguments`, with its peak resident memory (wait4 reports the child's own).
Measured run_measured(const std::vector<std::string>& arguments, const fs::path& log) {
  std::vector<std::string> words = {HARNESS_BINARY};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Measured measured;
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  if (WIFEXITED(status)) measured.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) measured.signal = WTERMSIG(status);
  measured.max_rss_kib = usage.ru_maxrss;
  measured.output = tail_lines(log.string(), 1000);
  return measured;
}

// The lines of `output` that contain `text`.
std::size_t lines_with(const std::vector<std::string>& output, const std::string& text) {
  return static_cast<std::size_t>(
      std::count_if(output.begin(), output.end(), [&](const std::string& line) { return line.find(text) != std::string::npos; }));
}

constexpr const char* kTooDeep = "expected lists and objects nested at most 256 deep, got deeper";

// 100,000 levels inside a field (5.8 MB): plot, check --baseline, status and a resuming run once
// died of SIGSEGV.
TEST(RecordBounds, DeeplyNestedRecordIsADamagedRecordForEveryReader) {
  const Damaged copy = damaged_copy("deep", [](const fs::path& record) {
    add_field(record, std::string(100000, '[') + std::string(100000, ']'));
  });
  const fs::path logs = copy.dir.parent_path();
  const std::string where = copy.record.string() + ": ";

  const Measured plot = run_measured({"plot", copy.dir.string()}, logs / "plot.log");
  EXPECT_EQ(plot.signal, 0);
  EXPECT_NE(plot.exit_code, 0);
  ASSERT_EQ(plot.output.size(), 1U) << joined(plot.output);
  EXPECT_NE(plot.output[0].find(where), std::string::npos) << plot.output[0];
  EXPECT_NE(plot.output[0].find(kTooDeep), std::string::npos) << plot.output[0];

  const Measured check = run_measured({"check", intact_results().string(), "--baseline", copy.dir.string()},
                                      logs / "check.log");
  EXPECT_EQ(check.signal, 0) << joined(check.output);
  // Its row is NOT COMPARABLE, naming the file: a warning, exit 0 without --strict.
  EXPECT_EQ(check.exit_code, 0) << joined(check.output);
  EXPECT_EQ(lines_with(check.output, kTooDeep), 1U) << joined(check.output);
  EXPECT_EQ(lines_with(check.output, "NOT COMPARABLE"), 1U) << joined(check.output);

  const Measured status = run_measured({"status", copy.dir.string()}, logs / "status.log");
  EXPECT_EQ(status.signal, 0) << joined(status.output);
  EXPECT_EQ(lines_with(status.output, kTooDeep), 1U) << joined(status.output);

  // A resuming run sets it aside, as it does a truncated record, and runs its point again.
  const Measured resume =
      run_measured({"run", (intact_results().parent_path() / "experiment.json").string(), "--out", copy.dir.string()},
                   logs / "resume.log");
  EXPECT_EQ(resume.signal, 0) << joined(resume.output);
  EXPECT_EQ(resume.exit_code, 0) << joined(resume.output);
  EXPECT_EQ(lines_with(resume.output, std::string("is not a complete record (") + kTooDeep + "); its point runs again"),
            1U)
      << joined(resume.output);
  EXPECT_TRUE(fs::exists(copy.record.string() + ".unreadable"));
  EXPECT_TRUE(read_json_file(copy.record.string()).contains("measurements"));
}

// A record above the cap is refused from its size: nothing of it is read.
TEST(RecordBounds, RecordAboveTheSizeCapIsRefusedBeforeItIsRead) {
  const Damaged copy = damaged_copy("huge", [](const fs::path& record) {
    fs::remove(record);
    std::ofstream(record) << "{";
    fs::resize_file(record, kMaxRecordBytes + 1);  // sparse: no gigabyte of disk
  });
  const fs::path logs = copy.dir.parent_path();
  const Measured intact = run_measured({"plot", intact_results().string()}, logs / "intact.log");
  ASSERT_EQ(intact.exit_code, 0) << joined(intact.output);
  const Measured plot = run_measured({"plot", copy.dir.string()}, logs / "plot.log");
  EXPECT_EQ(plot.signal, 0);
  EXPECT_NE(plot.exit_code, 0);
  ASSERT_EQ(plot.output.size(), 1U) << joined(plot.output);
  EXPECT_NE(plot.output[0].find(copy.record.string() + ": "), std::string::npos) << plot.output[0];
  EXPECT_NE(plot.output[0].find("expected a JSON file of at most 1024 MiB, got 1073741825 bytes"), std::string::npos)
      << plot.output[0];
  EXPECT_LT(plot.max_rss_kib, intact.max_rss_kib + 32 * 1024) << "KiB; the intact results took " << intact.max_rss_kib;
  fs::remove(copy.record);
}

// 50 MB of empty lists would take 20 times that once built (a 200 MB one once took 4.6 GB): the
// record is refused from a pass that builds nothing, within a few times its size.
TEST(RecordBounds, RecordOfTinyValuesIsRefusedWithinASmallMultipleOfItsSize) {
  constexpr std::size_t kFileBytes = 50 << 20;
  const Damaged copy = damaged_copy("tiny", [](const fs::path& record) {
    std::string lists = "[";
    while (lists.size() < kFileBytes) lists += "[],";
    lists += "[]]";
    add_field(record, lists);
  });
  const fs::path logs = copy.dir.parent_path();
  const Measured intact = run_measured({"status", intact_results().string()}, logs / "intact.log");
  const Measured status = run_measured({"status", copy.dir.string()}, logs / "status.log");
  EXPECT_EQ(status.signal, 0) << joined(status.output);
  EXPECT_EQ(lines_with(status.output, "expected a document that takes at most 6 times its 50."), 1U)
      << joined(status.output);
  const long file_kib = static_cast<long>(fs::file_size(copy.record) / 1024);
  EXPECT_LT(status.max_rss_kib, intact.max_rss_kib + 4 * file_kib)
      << "KiB for a record of " << file_kib << " KiB; the intact results took " << intact.max_rss_kib;
}

}  // namespace
}  // namespace harness::e2e
