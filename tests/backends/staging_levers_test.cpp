// Staging's levers by buffer size (staging_levers.h) and the settings that choose them: what
// "auto" resolves to at each size, where a set value wins, and what the records say. No GPU:
// the resolution is plain arithmetic; staging's use of it is device_staging_test.cpp's (gpu).
#include "backends/staging_levers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/registry.h"
#include "harness/common/errors.h"

namespace harness {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kChunk = 4 * kMiB;  // staging_chunk_bytes' default
const StagingLeverSettings kAuto{};

// As measured on an H200 (docs/gpus.md): both levers from 16 MiB up, neither below.
TEST(StagingLevers, AutoTurnsBothOnFromSixteenMebibytesAndNeitherBelow) {
  using Levers = StagingLevers;
  EXPECT_EQ(staging_levers(0, kChunk, kAuto, 4, true), (Levers{1, false}));
  EXPECT_EQ(staging_levers(4 * kMiB, kChunk, kAuto, 4, true), (Levers{1, false})) << "one chunk";
  EXPECT_EQ(staging_levers(16 * kMiB - 4, kChunk, kAuto, 4, true), (Levers{1, false}));
  EXPECT_EQ(staging_levers(16 * kMiB, kChunk, kAuto, 4, true), (Levers{4, true}));
  EXPECT_EQ(staging_levers(64 * kMiB, kChunk, kAuto, 4, true), (Levers{4, true}));
  EXPECT_EQ(staging_levers(64 * kMiB, kChunk, kAuto, 2, true), (Levers{2, true})) << "all the threads started";
  EXPECT_EQ(staging_levers(64 * kMiB, kChunk, kAuto, 4, false), (Levers{4, false})) << "hier cannot gather";
  EXPECT_EQ(staging_levers(64 * kMiB, 16 * kMiB, kAuto, 4, true), (Levers{4, true})) << "whatever the chunk";
}

// A set value is what runs, at every size: the threads all of them, gathering (set true) for
// buffers of more than one chunk, as before "auto".
TEST(StagingLevers, ASetValueWinsAtEverySize) {
  using Levers = StagingLevers;
  const StagingLeverSettings set = StagingLeverSettings::fixed(3, true);
  EXPECT_EQ(staging_levers(4096, kChunk, set, 3, true), (Levers{3, false})) << "one chunk: nothing to gather";
  EXPECT_EQ(staging_levers(kChunk + 4, kChunk, set, 3, true), (Levers{3, true}));
  EXPECT_EQ(staging_levers(64 * kMiB, kChunk, StagingLeverSettings::fixed(1, false), 1, true), (Levers{1, false}));
  // Each lever by itself.
  const StagingLeverSettings threads_set{2, std::nullopt};
  EXPECT_EQ(staging_levers(kMiB, kChunk, threads_set, 2, true), (Levers{2, false}));
  EXPECT_EQ(staging_levers(64 * kMiB, kChunk, threads_set, 2, true), (Levers{2, true}));
  const StagingLeverSettings gathers_set{std::nullopt, false};
  EXPECT_EQ(staging_levers(64 * kMiB, kChunk, gathers_set, 4, true), (Levers{4, false}));
}

TEST(StagingLevers, AutoStartsUpToFourThreadsOnAGpuAndOneOnTheHost) {
  EXPECT_EQ(reduction_threads_started(kAuto, /*staged=*/true, 8), 4);
  EXPECT_EQ(reduction_threads_started(kAuto, true, 2), 2) << "at most the rank's cores";
  EXPECT_EQ(reduction_threads_started(kAuto, true, 1), 1);
  EXPECT_EQ(reduction_threads_started(kAuto, true, 0), 4) << "cores unknown before launch";
  EXPECT_EQ(reduction_threads_started(kAuto, /*staged=*/false, 8), 1) << "host memory: as before";
  EXPECT_EQ(reduction_threads_started(StagingLeverSettings::fixed(6, false), false, 2), 6) << "set: as set";
  EXPECT_TRUE(copy_engine_may_gather(kAuto, true));
  EXPECT_FALSE(copy_engine_may_gather(kAuto, false));
  EXPECT_FALSE(copy_engine_may_gather(StagingLeverSettings::fixed(1, false), true));
  EXPECT_TRUE(copy_engine_may_gather(StagingLeverSettings::fixed(1, true), true));
}

// What the records say: the levers as steps of the buffer's size.
TEST(StagingLevers, TheRecordsStepsSayWhatEachSizeRanWith) {
  using Steps = std::vector<StagingLeverStep>;
  EXPECT_EQ(staging_lever_steps(kChunk, kAuto, 4, true), (Steps{{0, {1, false}}, {16 * kMiB, {4, true}}}));
  EXPECT_EQ(staging_lever_steps(kChunk, kAuto, 1, false), (Steps{{0, {1, false}}})) << "one thread, no gathering";
  EXPECT_EQ(staging_lever_steps(kChunk, StagingLeverSettings::fixed(4, true), 4, true),
            (Steps{{0, {4, false}}, {kChunk + 4, {4, true}}}));
  EXPECT_EQ(staging_lever_steps(kChunk, StagingLeverSettings::fixed(1, false), 1, true), (Steps{{0, {1, false}}}));
  // With a chunk as large as the auto edge, a set gathering starts past it.
  EXPECT_EQ(staging_lever_steps(32 * kMiB, StagingLeverSettings{std::nullopt, true}, 4, true),
            (Steps{{0, {1, false}}, {16 * kMiB, {4, false}}, {32 * kMiB + 4, {4, true}}}));
}

// The settings: "auto" by default, a value where one is set, refused otherwise in one line.
TEST(StagingLevers, TheSettingsTakeAutoOrAValue) {
  const BackendInfo& shm = find_backend("shm");
  ASSERT_NE(shm.settings, nullptr);
  const std::vector<BackendSetting> settings = shm.settings();
  ASSERT_EQ(settings.size(), 2U);
  EXPECT_EQ(settings[0].key, "shm_reduce_threads");
  EXPECT_EQ(settings[0].fallback, Json("auto"));
  EXPECT_EQ(settings[0].normalise(Json("auto"), "x"), Json("auto"));
  EXPECT_EQ(settings[0].normalise(Json(4), "x"), Json(4));
  try {
    settings[0].normalise(Json("four"), "settings.shm_reduce_threads");
    ADD_FAILURE() << "\"four\" accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "settings.shm_reduce_threads: expected \"auto\" or an integer from 1 to 256, got \"four\"");
  }
  EXPECT_THROW(settings[0].normalise(Json(0), "x"), ConfigError);
  EXPECT_EQ(settings[1].key, "shm_copy_engine_gathers");
  EXPECT_EQ(settings[1].fallback, Json("auto"));
  EXPECT_EQ(settings[1].normalise(Json("auto"), "x"), Json("auto"));
  EXPECT_EQ(settings[1].normalise(Json(true), "x"), Json(true));
  try {
    settings[1].normalise(Json("yes"), "settings.shm_copy_engine_gathers");
    ADD_FAILURE() << "\"yes\" accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "settings.shm_copy_engine_gathers: expected \"auto\", true or false, got \"yes\"");
  }

  BackendOptions options;  // both left at "auto"
  EXPECT_FALSE(staging_lever_settings(options).reduce_threads.has_value());
  EXPECT_FALSE(staging_lever_settings(options).copy_engine_gathers.has_value());
  EXPECT_EQ(shm_reduce_threads(options), 1) << "host memory";
  EXPECT_FALSE(shm_copy_engine_gathers(options));
  options.device = "cuda";
  options.threads_per_rank = 8;
  EXPECT_EQ(shm_reduce_threads(options), 4);
  EXPECT_TRUE(shm_copy_engine_gathers(options));
  options.owned["shm_reduce_threads"] = 2;
  options.owned["shm_copy_engine_gathers"] = false;
  EXPECT_EQ(staging_lever_settings(options).reduce_threads, 2);
  EXPECT_EQ(staging_lever_settings(options).copy_engine_gathers, false);
  EXPECT_EQ(shm_reduce_threads(options), 2);
  EXPECT_FALSE(shm_copy_engine_gathers(options));
}

// "auto" needs no threads_per_rank: it takes at most the rank's cores. A set count above one
// still does.
TEST(StagingLevers, AutoThreadsNeedNoThreadsPerRank) {
  BackendOptions options;
  options.device = "cuda";
  options.ranks = 2;
  EXPECT_EQ(find_backend("shm").problem(options), "");
  EXPECT_EQ(find_backend("hier").problem(options), "");
  options.owned["shm_reduce_threads"] = 4;
  EXPECT_NE(find_backend("shm").problem(options).find("shm_reduce_threads: 4 threads need threads_per_rank set"),
            std::string::npos);
}

}  // namespace
}  // namespace harness
