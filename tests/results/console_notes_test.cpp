// The notes below a report's console table (report.cpp's record_notes): what the records say
// that the table's columns do not.
#include "harness/results/report.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/common/files.h"
#include "harness/results/result_set.h"
#include "point_record_of.h"

namespace harness {
namespace {

// Staging through host memory is bound by the host's summing, whose lever is a setting: the
// console names it for the backends that read it, only where staging summed the largest size on
// one thread (the record's staging_levers; before record schema 14, the setting), and only where
// staging was measured at sizes where more threads paid (16 MiB up).
TEST(ConsoleNotes, StagedSumsOnOneThreadNameTheSettingThatSpeedsThem) {
  struct Case {
    std::string experiment;
    std::string exchange_path = "pinned host staging";
    int64_t largest_bytes = 64 << 20;
    std::vector<StagingLeverStep> levers = {};  // what the records say staging ran with
  };
  int directories = 0;
  const auto notes_of = [&directories](const Case& c) {
    const ResultsDirectory directory = fresh_results_directory("comm_staged_threads_test_" + std::to_string(directories++));
    const Experiment experiment = parse_experiment(c.experiment, "exp.json");
    const std::vector<Point> points = expand(experiment);
    for (const Point& point : points) {
      PointRecord record = ok_record_of(point);
      Measurements measurements;
      measurements.kind = Kind::kComm;
      measurements.world_size = 2;
      measurements.hosts = {"a", "a"};
      measurements.exchange_path = c.exchange_path;
      measurements.staging_levers = c.levers;
      std::vector<MessageSizeMetrics> sizes;
      for (int64_t bytes = 1 << 20; bytes <= c.largest_bytes; bytes *= 4) {
        MessageSizeMetrics size;
        size.bytes = bytes;
        size.time_us_median = size.time_us_min = size.time_us_max = 10000;
        sizes.push_back(size);
      }
      measurements.comm = CommMeasurements{sizes};
      record.measurements = measurements;
      write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
    }
    return console_text(ResultSet::load(directory, experiment, points, true));
  };
  const std::string hint =
      " on cuda: each rank summed its slice of the staged buffers on one thread (shm_reduce_threads)";
  const std::string staged = R"({"name": "exp", "settings": {"kind": "comm", "ranks": 2, "device": "cuda"},
                                 "sweep": {"backend": ["shm", "hier", "allreduce"]}})";
  const StagingLeverStep one_thread{0, {1, false}};
  const std::string one_core = notes_of({staged, "pinned host staging", 64 << 20, {one_thread}});
  EXPECT_NE(one_core.find("shm" + hint), std::string::npos) << "\"auto\" with one core a rank" << one_core;
  EXPECT_NE(one_core.find("hier" + hint), std::string::npos) << one_core;
  EXPECT_EQ(one_core.find("allreduce" + hint), std::string::npos) << "allreduce sums where MPI does" << one_core;
  const std::string defaults = notes_of({staged, "pinned host staging", 64 << 20, {one_thread, {16 << 20, {4, true}}}});
  EXPECT_EQ(defaults.find(hint), std::string::npos) << "\"auto\" summed 64 MiB on 4 threads" << defaults;
  const std::string before_auto = notes_of({R"({"name": "exp",
      "settings": {"kind": "comm", "ranks": 2, "device": "cuda", "shm_reduce_threads": 1},
      "sweep": {"backend": ["shm", "hier"]}})"});
  EXPECT_NE(before_auto.find("shm" + hint), std::string::npos) << "set to 1, no levers recorded" << before_auto;
  const std::string threaded = notes_of({R"({"name": "exp",
      "settings": {"kind": "comm", "ranks": 2, "device": "cuda", "threads_per_rank": 4, "shm_reduce_threads": 4},
      "sweep": {"backend": ["shm", "hier"]}})"});
  EXPECT_EQ(threaded.find(hint), std::string::npos) << threaded;
  EXPECT_NE(threaded.find("shm on cuda: the buffers reach it by pinned host staging"), std::string::npos) << threaded;
  const std::string small = notes_of({staged, "pinned host staging", 4 << 20});
  EXPECT_EQ(small.find(hint), std::string::npos) << "4 MiB at most: the threads were slower there" << small;
  const std::string cpu = notes_of({R"({"name": "exp", "settings": {"kind": "comm", "ranks": 2, "backend": "shm"}})",
                                    "host memory"});
  EXPECT_EQ(cpu.find("summed its slice"), std::string::npos) << "nothing staged" << cpu;
}

}  // namespace
}  // namespace harness
