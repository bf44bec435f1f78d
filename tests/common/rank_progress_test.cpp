// The ranks' progress slots: what a rank marks is what the harness reads back, damaged or foreign
// files are passed over, and the reason's line puts the ranks the others wait for first.
#include "harness/common/rank_progress.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace harness {
namespace {
namespace fs = std::filesystem;

fs::path progress_scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("harness_rank_progress_" + name);
  fs::remove_all(dir);
  return dir;
}

TEST(RankProgress, WhatEachRankMarksIsReadBackByRank) {
  const fs::path dir = progress_scratch("marks");
  const int64_t before = wall_clock_ns();
  {
    RankProgressWriter rank1(dir.string(), 1, "nodeb");
    RankProgressWriter rank0(dir.string(), 0, "nodea");
    rank0.mark(RankStage::kInBackend, 36);
    rank1.mark(RankStage::kOutsideBackend, 35);
    rank1.mark(RankStage::kFinishing);  // keeps its count
  }
  const std::vector<RankProgress> read = read_rank_progress(dir.string());
  ASSERT_EQ(read.size(), 2U);
  EXPECT_EQ(read[0].rank, 0);
  EXPECT_EQ(read[0].host, "nodea");
  EXPECT_EQ(read[0].stage, RankStage::kInBackend);
  EXPECT_EQ(read[0].calls, 36);
  EXPECT_EQ(read[1].host, "nodeb");
  EXPECT_EQ(read[1].stage, RankStage::kFinishing);
  EXPECT_EQ(read[1].calls, 35);
  EXPECT_GE(read[1].since_ns, before);
  EXPECT_LE(read[1].since_ns, wall_clock_ns());
}

// The harness's own collectives (an epoch's barrier, a partial write's gather) are marked for
// their scope through the process's writer, then the rank is back where it stood; with no writer
// (a unit test of the trainer), nothing is marked.
TEST(RankProgress, AHarnessCollectiveIsMarkedForItsScopeThroughTheProcesssWriter) {
  { const InHarnessCollective nothing_to_mark; }
  const fs::path dir = progress_scratch("collective");
  RankProgressWriter writer(dir.string(), 0, "nodea");
  EXPECT_EQ(RankProgressWriter::of_this_process(), &writer);
  writer.mark(RankStage::kOutsideBackend, 7);
  {
    const InHarnessCollective marked;
    const std::vector<RankProgress> inside = read_rank_progress(dir.string());
    ASSERT_EQ(inside.size(), 1U);
    EXPECT_EQ(inside[0].stage, RankStage::kInHarnessCollective);
    EXPECT_EQ(inside[0].calls, 7);
  }
  const std::vector<RankProgress> after = read_rank_progress(dir.string());
  ASSERT_EQ(after.size(), 1U);
  EXPECT_EQ(after[0].stage, RankStage::kOutsideBackend);
  EXPECT_EQ(after[0].calls, 7);
}

TEST(RankProgress, DamagedOrForeignFilesAndMissingFoldersReadAsNothing) {
  EXPECT_TRUE(read_rank_progress(progress_scratch("none").string()).empty());
  const fs::path dir = progress_scratch("damaged");
  { RankProgressWriter rank0(dir.string(), 0, "nodea"); }
  fs::copy_file(dir / "0", dir / "5");  // rank 0's slot under another rank's name
  std::ofstream(dir / "1") << "short";
  std::ofstream(dir / "2") << std::string(128, 'x');  // whole, but no slot
  const std::vector<RankProgress> read = read_rank_progress(dir.string());
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(read[0].rank, 0);
}

// Files planted where the slots go: a FIFO does not stop the reader (nor the writer), a hard link
// to a file elsewhere is not emptied, a linked folder is not read.
TEST(RankProgress, PlantedFifosHardLinksAndLinkedFoldersAreNeitherFollowedNorEmptied) {
  const fs::path dir = progress_scratch("planted");
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "0").c_str(), 0600), 0);
  { RankProgressWriter rank0(dir.string(), 0, "nodea"); }  // returns: no slot on a FIFO
  const fs::path elsewhere = progress_scratch("planted_target");
  std::ofstream(elsewhere.string()) << "precious";
  fs::create_hard_link(elsewhere, dir / "1");
  { RankProgressWriter rank1(dir.string(), 1, "nodea"); }
  EXPECT_EQ(fs::file_size(elsewhere), 8U);
  { RankProgressWriter rank2(dir.string(), 2, "nodea"); }
  const std::vector<RankProgress> read = read_rank_progress(dir.string());  // returns despite the FIFO
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(read[0].rank, 2);
  const fs::path linked = progress_scratch("planted_link");
  fs::create_directory_symlink(dir, linked);
  EXPECT_TRUE(read_rank_progress(linked.string()).empty());
  fs::remove(linked);
  fs::remove_all(dir);
  fs::remove(elsewhere);
}

TEST(RankProgress, AWriterThatCannotMakeItsSlotMarksNothingAndDoesNotThrow) {
  const fs::path file = progress_scratch("blocked");
  std::ofstream(file.string()) << "a file where the folder should be";
  RankProgressWriter writer((file / "where").string(), 0, "nodea");
  writer.mark(RankStage::kInBackend, 3);
  EXPECT_TRUE(read_rank_progress((file / "where").string()).empty());
  fs::remove(file);
}

TEST(RankProgress, ASlotIsNeverWrittenThroughALinkedFolder) {
  const fs::path dir = progress_scratch("linked");
  const fs::path elsewhere = progress_scratch("linked_target");
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(elsewhere, dir);
  { RankProgressWriter rank0(dir.string(), 0, "nodea"); }
  EXPECT_TRUE(fs::is_empty(elsewhere));
  fs::remove(dir);
  fs::remove_all(elsewhere);
}

TEST(RankProgress, TheReasonNamesTheRanksFurthestBehindFirstWithTheirHostsAndTheSilentOnes) {
  const int64_t now = int64_t{1000} * 1'000'000'000;
  const auto at = [now](double seconds_ago) { return now - static_cast<int64_t>(seconds_ago * 1e9); };
  std::vector<RankProgress> ranks;
  for (int rank : {0, 1, 3, 4}) {
    ranks.push_back({rank, rank < 3 ? "nodea" : "nodeb", RankStage::kInBackend, 36, at(24.0)});
  }
  ranks.push_back({2, "nodea", RankStage::kOutsideBackend, 36, at(24.2)});
  EXPECT_EQ(describe_rank_progress(ranks, 6, now),
            "rank 2 on nodea: outside the backend (after call 36) for 24.2 s; ranks 0-1,3-4 on nodea, nodeb: "
            "inside the backend (call 37) for 24.0 s; rank 5: no slot (not started, or not yet written back by its "
            "host)");
  EXPECT_EQ(describe_rank_progress({{0, "nodea", RankStage::kBackendSetup, 0, at(3)}}, 1, now),
            "rank 0 on nodea: setting up the backend for 3.0 s");
  EXPECT_EQ(describe_rank_progress({{0, "nodea", RankStage::kOutsideBackend, 0, at(1)}}, 1, now),
            "rank 0 on nodea: outside the backend (before its first call) for 1.0 s");
  EXPECT_EQ(describe_rank_progress({}, 4, now), "");
  // Ranks waiting in the harness's own collectives come after one that has not joined them.
  EXPECT_EQ(describe_rank_progress({{0, "nodea", RankStage::kInHarnessCollective, 5, at(2)},
                                    {1, "nodea", RankStage::kOutsideBackend, 5, at(2.5)}},
                                   2, now),
            "rank 1 on nodea: outside the backend (after call 5) for 2.5 s; rank 0 on nodea: in a collective of the "
            "harness's own (after call 5) for 2.0 s");
  // A slot of a rank beyond the point's is not one of its ranks.
  EXPECT_EQ(describe_rank_progress({{7, "nodea", RankStage::kInBackend, 0, at(1)}}, 2, now), "");
}

TEST(RankProgress, AHostNameStaysOnOneLine) {
  const fs::path dir = progress_scratch("host");
  { RankProgressWriter rank0(dir.string(), 0, "node\na"); }
  const std::vector<RankProgress> read = read_rank_progress(dir.string());
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(read[0].host, "node?a");
}

TEST(RankProgress, TheReasonStaysOneShortLineForManyRanksAndGroups) {
  std::vector<RankProgress> ranks;
  for (int rank = 0; rank < 4096; ++rank) {
    ranks.push_back({rank, "node" + std::to_string(rank / 64), RankStage::kInBackend, rank % 10, 0});
  }
  const std::string line = describe_rank_progress(ranks, 4096, 0);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_LT(line.size(), 1000U) << line;
  EXPECT_NE(line.find("; 6 more group(s)"), std::string::npos) << line;
  EXPECT_NE(line.find(" and 61 more"), std::string::npos) << line;  // hosts: 3 named of 64
}

}  // namespace
}  // namespace harness
