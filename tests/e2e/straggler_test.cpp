// End to end: the straggler detector on 4 ranks (oversubscribed on a 2-core machine), with a
// compute delay injected on rank 2 and without: rank 2 and its host are named and flagged in the
// console, stats.csv and report.html, with the compute-by-rank plot; a delay of a fraction of the
// short step is flagged too; without a delay nothing is flagged, and stats.csv's straggler columns
// are empty.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "e2e_helpers.h"
#include "harness/common/files.h"
#include "harness/common/machine.h"
#include "harness/results/stragglers.h"

namespace harness::e2e {
namespace {

using CsvRow = std::map<std::string, std::string>;

// Iris on 4 ranks with rank 2 delayed by the delays `sweep` gives, 3 repeats. 120 samples, 2 per
// rank and step: 15 steps per epoch.
fs::path straggler_experiment(const fs::path& dir, const std::string& name, const std::string& sweep) {
  return write_experiment(dir, R"({"name": ")" + name + R"(", "repeats": 3,
      "settings": {"workload": "iris_mlp", "lr": 0.1, "batch_size": 2, "ranks": 4,
                   "threads_per_rank": 1, "inject_compute_delay_rank": 2},
      "sweep": )" + sweep + "}");
}

// What a stats.csv row flagged, for a failure's message.
std::string described_flag(const CsvRow& row) {
  return "\n" + row.at("straggler_flag") + " " + row.at("straggler_rank") + ", excess " +
         row.at("straggler_excess_ms") + " ms, p " + row.at("straggler_p");
}

// The undelayed configuration of the test below again, on its own: its stats.csv row.
void run_undelayed_again(const fs::path& dir, CsvRow& row) {
  const fs::path again = dir / "quiet_again";
  const fs::path experiment =
      straggler_experiment(dir, "straggler_quiet", R"({"zip": {"inject_compute_delay_ms": [0], "epochs": [4]}})");
  const HarnessRun rerun = run_harness({"run", experiment.string(), "--out", again.string()}, dir / "log_again");
  ASSERT_TRUE(rerun.outcome.ok()) << explained(rerun);
  const auto stats = read_csv(again / "stats.csv");
  ASSERT_EQ(stats.size(), 1U);
  row = stats[0];
}

TEST(Straggler, ADelayedRankIsNamedAndFlaggedAndNoDelayFlagsNothing) {
  const fs::path dir = scratch("straggler");
  // 60 timed steps per point, 240 for the small delay. The small delay's flag needs blocks of
  // steps to test (consistent_lead.h): on CI's idle 2 cores, 4 ranks waited for cores in spells
  // that lasted half of 60 steps, and a rank the slowest in all 60 was left unflagged (1 block);
  // over 240 steps the record samples every 4th, the spells span a few samples, and the repeats
  // add blocks of their own.
  const fs::path experiment = straggler_experiment(
      dir, "straggler", R"({"zip": {"inject_compute_delay_ms": [0, 20, 0.05], "epochs": [4, 4, 16]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  ASSERT_TRUE(run.outcome.ok()) << explained(run);
  const std::string console = joined(run.output);

  const auto stats = read_csv(out / "stats.csv");
  ASSERT_EQ(stats.size(), 3U) << console;
  const auto& delayed = stats[1];
  const auto& nudged = stats[2];
  // Without a delay nothing is flagged, and the straggler columns are empty (the console's table
  // still names the rank that was the slowest most often: some rank always is). In one of two
  // tries: this VM's ranks are not identical. Beside the sandbox's agent (at nice -10, ~7% of a
  // core), one rank of 4 was 12-20% slower in compute than the others in all 3 repeats (p 1e-7 to
  // 1e-9), consistently, in 5 of 10 runs; that flagged both tries of a CI run (at 36b9022) until a
  // flag also asked for a wait of kMinWaitShare of the step: those ranks cost the others 2-4%, the
  // 0.05 ms sleep below 9-14% (stragglers.h). A detector that flags identical ranks more often than
  // kFalseAlarmRate (consistent_lead_test.cpp's synthetic runs) fails both tries.
  CsvRow quiet = stats[0];
  std::string quiet_flags;
  if (!quiet.at("straggler_flag").empty()) {
    quiet_flags = described_flag(quiet);
    ASSERT_NO_FATAL_FAILURE(run_undelayed_again(dir, quiet));
    if (!quiet.at("straggler_flag").empty()) quiet_flags += described_flag(quiet);
  }
  for (const char* column : {"straggler_rank", "straggler_host", "straggler_share", "straggler_chance",
                             "straggler_lead_ms", "straggler_excess_ms", "straggler_p", "straggler_flag"}) {
    EXPECT_EQ(quiet.at(column), "") << column << ": flagged without a delay, twice:" << quiet_flags << "\n" << console;
  }
  // With it: rank 2, in nearly every step, by about the delay.
  EXPECT_EQ(delayed.at("straggler_rank"), "2") << console;
  EXPECT_EQ(delayed.at("straggler_flag"), "rank") << console;
  EXPECT_GE(std::stod(delayed.at("straggler_share")), 0.9) << console;
  EXPECT_GE(std::stod(delayed.at("straggler_lead_ms")), 15.0) << console;
  EXPECT_GE(std::stod(delayed.at("straggler_lead_p95_ms")), std::stod(delayed.at("straggler_lead_ms")));
  EXPECT_GE(std::stod(delayed.at("straggler_wait_ms")), 10.0) << console;
  EXPECT_EQ(delayed.at("straggler_chance"), "0.25") << console;  // 1 of 4 ranks
  EXPECT_GE(std::stod(delayed.at("straggler_excess_ms")), 15.0) << console;
  EXPECT_LE(std::stod(delayed.at("straggler_p")), kFalseAlarmRate / 2 / 4) << console;
  // A sleep of 0.05 ms in each step made rank 2 0.18-0.28 ms slower on a step of 0.4-0.5 ms on an
  // idle machine (the sleep's wake-up is most of it; more beside a build), which 10705f8 did not
  // flag (a lead of 0.45 ms in 67% of the steps, under its floor of twice the ranks' jitter).
  EXPECT_EQ(nudged.at("straggler_rank"), "2") << console;
  EXPECT_EQ(nudged.at("straggler_flag"), "rank") << console;
  // Its host is the one its record says rank 2 ran on.
  const Json record = read_json_file((out / "points" / (delayed.at("first_id") + ".json")).string());
  const std::string host = record["measurements"]["hosts"][2].get<std::string>();
  EXPECT_EQ(delayed.at("straggler_host"), host);
  // The record keeps every rank's compute at a bounded sample of the 60 steps: all of them here.
  const Json& sample = record["measurements"]["steps"]["rank_compute"];
  EXPECT_EQ(sample["steps"].size(), 60U);
  EXPECT_EQ(sample["compute_s"][0].size(), 4U);
  EXPECT_EQ(record["measurements"]["steps"]["slowest_rank"].size(), 60U);

  // The console: the table, and a flag line for each delayed configuration, none for the other.
  EXPECT_NE(console.find("the slowest rank (most often"), std::string::npos) << console;
  EXPECT_NE(console.find("straggler: " + delayed.at("first_id") + " "), std::string::npos) << console;
  EXPECT_NE(console.find("straggler: " + nudged.at("first_id") + " "), std::string::npos) << console;
  EXPECT_NE(console.find(": rank 2 (" + host + ") was the slowest in "), std::string::npos) << console;
  if (quiet_flags.empty()) {
    EXPECT_EQ(console.find("straggler: " + stats[0].at("first_id") + " "), std::string::npos) << console;
  }

  // report.html says it before the table, and draws compute by rank.
  const std::string html = read_text(out / "report.html");
  EXPECT_NE(html.find("<p class=\"warning\" id=\"straggler\">straggler: " + delayed.at("first_id")), std::string::npos);
  EXPECT_NE(html.find("id=\"plot-compute_by_rank\""), std::string::npos);
  const std::string svg = read_text(out / "plots" / "compute_by_rank.svg");
  EXPECT_NE(svg.find("(straggler: rank 2, " + host + ")"), std::string::npos);
}

// A rank that never reaches the exchange hangs the point until its time limit: the record's
// reason then names it as the one the others waited for, inside the backend's first call.
TEST(Straggler, AHungPointsReasonSaysWhichRankTheOthersWaitedFor) {
  const fs::path dir = scratch("straggler_hang");
  const fs::path experiment = write_experiment(dir, R"({
    "name": "straggler_hang",
    "settings": {"workload": "iris_mlp", "epochs": 4, "batch_size": 2, "ranks": 4, "threads_per_rank": 1,
                 "warmup_steps": 0, "inject_compute_delay_rank": 2, "inject_compute_delay_ms": 60000,
                 "timeout_s": 8},
    "sweep": {"overlap": [false, true]}})");
  const fs::path out = dir / "out";
  const HarnessRun run = run_harness({"run", experiment.string(), "--out", out.string()}, dir / "log");
  EXPECT_FALSE(run.outcome.ok()) << explained(run);
  const std::string console = joined(run.output);
  const auto summary = read_csv(out / "summary.csv");
  ASSERT_EQ(summary.size(), 2U) << console;
  const auto reason_of = [&](std::size_t point) {
    EXPECT_EQ(summary[point].at("status"), "timeout") << console;
    return read_json_file((out / "points" / (summary[point].at("id") + ".json")).string())["reason"].get<std::string>();
  };
  const std::string reason = reason_of(0);
  const std::string host = physical_host_name();  // no hosts listed: every rank runs here
  EXPECT_NE(reason.find("timed out after the 8 s limit; where the ranks stood: rank 2 on " + host +
                        ": outside the backend (before its first call) for "),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("; ranks 0-1,3 on " + host + ": inside the backend (call 1) for "), std::string::npos) << reason;
  EXPECT_NE(console.find(reason), std::string::npos) << console;  // the console says it as the record does
  // With overlap the others may have finished their reductions and wait in one of the harness's
  // own collectives (a partial write's gather): still rank 2 first, and apart from them.
  const std::string overlapped = reason_of(1);
  EXPECT_NE(overlapped.find("where the ranks stood: rank 2 on " + host + ": outside the backend ("), std::string::npos)
      << overlapped;
  EXPECT_NE(overlapped.find("; ranks 0-1,3 on " + host + ": "), std::string::npos) << overlapped;
  // The slots served the reason and are gone.
  for (const auto& entry : fs::directory_iterator(out / "logs")) {
    EXPECT_EQ(entry.path().string().find(".where"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace harness::e2e
