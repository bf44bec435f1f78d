// The backend wrapper that marks each call in the rank's progress slot: inside call N while the
// backend runs, outside after call N once it returned, where a throw left it otherwise.
#include "harness/rank/marked_sync.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include "harness/common/rank_progress.h"

namespace harness {
namespace {
namespace fs = std::filesystem;

// A backend that runs `during` inside each call.
class Probe final : public GradientSync {
 public:
  explicit Probe(std::function<void()> during) : during_(std::move(during)) {}
  std::string_view name() const override { return "probe"; }
  void allreduce_sum(std::span<float>) override { during_(); }
  int host_threads() const override { return 3; }

 private:
  std::function<void()> during_;
};

RankProgress slot_of_rank_0(const fs::path& dir) {
  const std::vector<RankProgress> read = read_rank_progress(dir.string());
  if (read.size() != 1) throw std::runtime_error("expected one slot");
  return read[0];
}

TEST(MarkedSync, EachCallIsMarkedInsideWhileItRunsAndOutsideWithItsCountAfter) {
  const fs::path dir = fs::temp_directory_path() / "harness_marked_sync";
  fs::remove_all(dir);
  RankProgressWriter progress(dir.string(), 0, "nodea");
  std::vector<RankProgress> seen_inside;
  bool fail = false;
  MarkedSync sync(std::make_unique<Probe>([&] {
                    seen_inside.push_back(slot_of_rank_0(dir));
                    if (fail) throw std::runtime_error("the backend failed");
                  }),
                  progress);
  EXPECT_EQ(sync.name(), "probe");
  EXPECT_EQ(sync.host_threads(), 3);
  EXPECT_EQ(slot_of_rank_0(dir).stage, RankStage::kOutsideBackend);
  EXPECT_EQ(slot_of_rank_0(dir).calls, 0);
  float value = 1;
  for (int call = 1; call <= 3; ++call) {
    sync.allreduce_sum(std::span<float>(&value, 1));
    ASSERT_EQ(seen_inside.size(), static_cast<std::size_t>(call));
    EXPECT_EQ(seen_inside.back().stage, RankStage::kInBackend);
    EXPECT_EQ(seen_inside.back().calls, call - 1);  // call N: N - 1 returned before it
    EXPECT_EQ(slot_of_rank_0(dir).stage, RankStage::kOutsideBackend);
    EXPECT_EQ(slot_of_rank_0(dir).calls, call);
  }
  // Staging's scattered reductions are calls like the others; the end of one is not a call.
  EXPECT_EQ(sync.allreduce_sum_scattered(std::span<float>(&value, 1)).size(), 1U);
  ASSERT_EQ(seen_inside.size(), 4U);
  EXPECT_EQ(seen_inside.back().stage, RankStage::kInBackend);
  EXPECT_EQ(seen_inside.back().calls, 3);
  sync.end_scattered();
  EXPECT_EQ(slot_of_rank_0(dir).stage, RankStage::kOutsideBackend);
  EXPECT_EQ(slot_of_rank_0(dir).calls, 4);
  fail = true;
  EXPECT_THROW(sync.allreduce_sum(std::span<float>(&value, 1)), std::runtime_error);
  EXPECT_EQ(slot_of_rank_0(dir).stage, RankStage::kInBackend);  // where it failed
  EXPECT_EQ(slot_of_rank_0(dir).calls, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace harness
