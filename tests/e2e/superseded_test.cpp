// End to end: a point run again sets its earlier record aside (points/<id>.json.superseded, its log
// and trace with it) before its job is submitted, so that no report, check or status takes it for
// the new run's; only a new ok record replaces it, and a later run without --fresh takes it back.
// The refused submission under --fresh (a fake sbatch first on PATH) and the full disk (a 1 MiB
// tmpfs in a mount namespace of its own); Ctrl-C: Files.FreshRunInterruptedSetsTheOldRecordAside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "e2e_helpers.h"
#include "fake_slurm.h"
#include "harness/common/files.h"
#include "harness/common/json.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

// The files of `folder` by name, with their contents.
std::map<std::string, std::string> files_in(const fs::path& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(folder))
    files[entry.path().filename().string()] = read_text(entry.path());
  return files;
}

// `files` with `suffix` added to each name.
std::map<std::string, std::string> renamed(const std::map<std::string, std::string>& files, const std::string& suffix) {
  std::map<std::string, std::string> result;
  for (const auto& [name, text] : files) result[name + suffix] = text;
  return result;
}

TEST(Superseded, ARefusedFreshRunSetsTheRecordsAsideAndAResumeTakesThemBack) {
  FakeCluster cluster = fake_cluster("refused_fresh", R"({"name": "slurm", "mode": "per-point",
    "start_ranks_with": "mpirun"})",
                                     2);
  const HarnessRun first = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--launcher", "local"}, "1.log");
  ASSERT_EQ(first.outcome.exit_code, 0) << explained(first);
  const std::map<std::string, std::string> records = files_in(cluster.out / "points");
  const std::map<std::string, std::string> logs = files_in(cluster.out / "logs");
  ASSERT_EQ(records.size(), 2U);
  ASSERT_EQ(logs.size(), 2U);
  const fs::path baseline = cluster.dir / "baseline";
  fs::copy(cluster.out, baseline, fs::copy_options::recursive);

  std::ofstream(cluster.state / "refuse") << "";
  const HarnessRun refused =
      cluster.harness({"run", cluster.experiment.string(), "--out", cluster.out.string(), "--fresh"}, "2.log");
  const std::string text = joined(refused.output);
  EXPECT_EQ(refused.outcome.exit_code, 1) << text;
  EXPECT_NE(text.find("FAILED: sbatch"), std::string::npos) << text;
  EXPECT_NE(text.find("harness: 2 point(s) have no ok record from this run; their earlier ok records wait aside in " +
                      (cluster.out / "points").string() + " as <id>.json.superseded"),
            std::string::npos)
      << text;
  // Nothing lost, nothing read as this run's.
  EXPECT_EQ(files_in(cluster.out / "points"), renamed(records, ".superseded"));
  EXPECT_EQ(files_in(cluster.out / "logs"), renamed(logs, ".superseded"));
  EXPECT_EQ(read_csv(cluster.out / "summary.csv").size(), 0U);
  const HarnessRun status = cluster.harness({"status", cluster.out.string()}, "3.log");
  EXPECT_NE(joined(status.output).find("0 of 2 point(s) done (0 ok), 0 in flight, 2 not submitted"), std::string::npos)
      << joined(status.output);
  const HarnessRun check = cluster.harness({"check", cluster.out.string(), "--baseline", baseline.string()}, "4.log");
  EXPECT_NE(check.outcome.exit_code, 0) << joined(check.output);
  EXPECT_NE(joined(check.output).find("every configuration lacks the records of a side (2 missing row(s))"),
            std::string::npos)
      << joined(check.output);

  fs::remove(cluster.state / "refuse");
  const HarnessRun resumed = cluster.harness(
      {"run", cluster.experiment.string(), "--out", cluster.out.string(), "--launcher", "local"}, "5.log");
  EXPECT_EQ(resumed.outcome.exit_code, 0) << explained(resumed);
  EXPECT_NE(joined(resumed.output).find("2 point(s) kept from an earlier run"), std::string::npos)
      << joined(resumed.output);
  EXPECT_EQ(files_in(cluster.out / "points"), records);
  EXPECT_EQ(files_in(cluster.out / "logs"), logs);
  EXPECT_EQ(read_csv(cluster.out / "summary.csv").size(), 2U);
}

// A results directory on a nearly full disk (a 1 MiB tmpfs, filled to leave 0 to 16 pages), run
// again with --fresh: points fail because their ranks cannot write, or their records cannot be
// written. No ok record may be lost (a failed record must not replace it), and once the disk has
// room, a run without --fresh keeps every point instead of running it again.
TEST(Superseded, AFullDiskDuringAFreshRunLosesNoOkRecordAndTheNextRunKeepsThem) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to mount a small file system in a namespace of its own";
  const fs::path dir = scratch("superseded_full_disk");
  const fs::path experiment = write_experiment(dir, R"({"name": "full", "repeats": 4, "settings": {"kind": "comm",
    "ranks": 1, "comm_min_bytes": 4096, "comm_max_bytes": 4096}})");
  ProcessRequest probe;
  probe.argv = {"unshare", "--mount", "true"};
  probe.log_path = (dir / "probe.log").string();
  if (!run_process(probe).ok()) GTEST_SKIP() << "no mount namespace here: " << read_text(dir / "probe.log");
  const std::vector<int> free_pages = {0, 1, 2, 3, 4, 6, 8, 12, 16};
  std::string levels;
  for (const int pages : free_pages) levels += std::to_string(pages) + " ";
  std::ofstream(dir / "fill.sh") << R"(set -u
harness=$1 experiment=$2 copies=$3
mkdir -p "$copies/disk"
mount -t tmpfs -o size=1m tmpfs "$copies/disk" || exit 77
"$harness" run "$experiment" --out "$copies/disk/r" > "$copies/first.log" 2>&1 || { cat "$copies/first.log"; exit 1; }
for pages in )" << levels << R"(; do
  rm -f "$copies/disk/filler"
  available_kib=$(df -k --output=avail "$copies/disk" | tail -n 1)
  count=$((available_kib / 4 - pages))
  if ((count > 0)); then dd if=/dev/zero of="$copies/disk/filler" bs=4k count=$count 2> /dev/null; fi
  "$harness" run "$experiment" --out "$copies/disk/r" --fresh > "$copies/$pages.fresh.log" 2>&1
  mkdir -p "$copies/$pages/points"
  cp "$copies/disk/r/points/"* "$copies/$pages/points/" 2> /dev/null || true
  rm -f "$copies/disk/filler"
  status=0
  "$harness" run "$experiment" --out "$copies/disk/r" > "$copies/$pages.resume.log" 2>&1 || status=$?
  echo "$status" > "$copies/$pages.resume.status"
done
)";
  ProcessRequest request;
  request.argv = {"unshare", "--mount", "--", "bash", (dir / "fill.sh").string()};
  request.argv.insert(request.argv.end(), {HARNESS_BINARY, experiment.string(), dir.string()});
  request.log_path = (dir / "fill.log").string();
  request.timeout_s = 300;
  const ProcessOutcome outcome = run_process(request);
  if (outcome.exit_code == 77) GTEST_SKIP() << "cannot mount a tmpfs here: " << read_text(dir / "fill.log");
  ASSERT_TRUE(outcome.ok()) << outcome.describe() << "\n" << read_text(dir / "fill.log");

  int levels_with_a_point_not_ok = 0;
  for (const int pages : free_pages) {
    const std::string level = std::to_string(pages);
    SCOPED_TRACE(level + " page(s) free; the --fresh run said:\n" + read_text(dir / (level + ".fresh.log")) +
                 "\nthe run after it:\n" + read_text(dir / (level + ".resume.log")));
    // Each point's ok record: this run's in place, or the earlier one set aside.
    std::set<std::string> with_ok_record;
    int ok_in_place = 0;
    for (const auto& entry : fs::directory_iterator(dir / level / "points")) {
      const std::string name = entry.path().filename().string();
      const bool aside = name.ends_with(".json.superseded");
      if (!aside && !name.ends_with(".json")) continue;
      const Json record = read_json_file(entry.path().string());
      if (record["status"] != "ok") continue;
      if (!aside) ++ok_in_place;
      EXPECT_EQ(record["measurements"]["complete"], true) << name;
      with_ok_record.insert(name.substr(0, name.find(".json")));
    }
    EXPECT_EQ(with_ok_record.size(), 4U) << "an ok record was lost";
    if (ok_in_place < 4) ++levels_with_a_point_not_ok;
    EXPECT_EQ(read_text(dir / (level + ".resume.status")), "0\n");
    EXPECT_NE(read_text(dir / (level + ".resume.log")).find("4 point(s) kept from an earlier run"), std::string::npos)
        << "a point whose ok record was set aside ran again";
  }
  EXPECT_GE(levels_with_a_point_not_ok, 1) << "no fill level made a point fail: this test checked nothing";
}

}  // namespace
}  // namespace harness::e2e
