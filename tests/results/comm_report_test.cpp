// The comm report's crossover lines: where each backend configuration overtakes MPI_Allreduce of
// the same run, and where a backend's own algorithms cross (cuda_ipc's one-shot and two-shot),
// from the median over repeats at each size.
#include "harness/results/comm_report.h"
#include "harness/results/crossover_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <map>
#include <optional>

#include "harness/common/files.h"
#include "harness/results/report.h"
#include "harness/results/result_set.h"
#include "point_record_of.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

// A comm sweep: allreduce, hier, and hier without its MPI_Allreduce crossover, 3 repeats.
Experiment crossover_experiment() {
  return parse_experiment(R"({"name": "exp", "repeats": 3, "settings": {"kind": "comm", "ranks": 4, "nodes": 2},
    "sweep": {"backend": ["allreduce", "hier"], "hier_allreduce_below_bytes": [16384, 0]},
    "exclude": [{"backend": "allreduce", "hier_allreduce_below_bytes": 0}]})",
                          "exp.json");
}

// Writes a record of `point` whose reductions take `times_us` at 1 KiB, 16 KiB and 64 KiB.
void write_comm_record(const ResultsDirectory& directory, const Point& point, const std::vector<double>& times_us) {
  PointRecord record = ok_record_of(point);
  Measurements measurements;
  measurements.kind = Kind::kComm;
  measurements.world_size = 4;
  measurements.hosts = {"a", "a", "b", "b"};
  CommMeasurements comm;
  const std::vector<int64_t> sizes = {1024, 16384, 65536};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    MessageSizeMetrics size;
    size.bytes = sizes[i];
    size.time_us_median = size.time_us_min = size.time_us_max = times_us[i];
    comm.sizes.push_back(size);
  }
  measurements.comm = comm;
  record.measurements = measurements;
  write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
}

TEST(CommReport, SaysFromWhichSizeEachConfigurationBeatsAllreduceOnMediansOverRepeats) {
  const ResultsDirectory directory = fresh_results_directory("comm_report_test");
  const Experiment experiment = crossover_experiment();
  const std::vector<Point> points = expand(experiment);
  ASSERT_EQ(points.size(), 9U);  // allreduce, hier, hier below 0; 3 repeats
  // Per configuration and repeat: one slow repeat each, which the medians leave out.
  const std::map<std::string, std::vector<std::vector<double>>> times = {
      {"allreduce 16384", {{30, 60, 100}, {30, 60, 100}, {300, 600, 1000}}},
      {"hier 16384", {{30, 50, 50}, {30, 50, 50}, {30, 50, 50}}},   // from 16 KiB: 1.2x, 2x
      {"hier 0", {{40, 50, 200}, {40, 50, 200}, {4, 5, 20}}},       // only at 16 KiB: not the largest
  };
  for (const Point& point : points) {
    const std::string name = point.settings.backend + " " + to_json(point.settings)["hier_allreduce_below_bytes"].dump();
    write_comm_record(directory, point, times.at(name).at(static_cast<std::size_t>(point.repeat)));
  }
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  EXPECT_EQ(crossover_summary(set),
            "Against allreduce (its median time over repeats / this one's, per size):\n"
            "  backend=hier hier_allreduce_below_bytes=16384: faster from 16384 B up (1.20-2.00x), 1.00x below\n"
            "  backend=hier hier_allreduce_below_bytes=0: not faster at the largest size, 65536 B (0.50x)\n");
  // The console table ends with it.
  const std::string table = CommReport().console_table(set);
  EXPECT_NE(table.find("faster from 16384 B up"), std::string::npos) << table;
  // Two nodes: the transport's own bandwidth in and between nodes beside the backend's; these
  // records measured none, which shows as "-", not as 0.00.
  EXPECT_NE(table.find("intra"), std::string::npos) << table;
  for (std::size_t at = table.find("\np0"); at != std::string::npos; at = table.find("\np0", at + 1)) {
    const std::string row = table.substr(at + 1, table.find('\n', at + 1) - at - 1);
    EXPECT_TRUE(row.ends_with("-       -")) << row;
  }
  // The plots: one curve per configuration, its median over the repeats (the slow one left out).
  const std::string latency = CommReport().plot_data(set).at("latency");
  EXPECT_EQ(latency,
            "\"backend=allreduce hier_allreduce_below_bytes=16384 ranks=4\"\n1024 30\n16384 60\n65536 100\n\n\n"
            "\"backend=hier hier_allreduce_below_bytes=16384 ranks=4\"\n1024 30\n16384 50\n65536 50\n\n\n"
            "\"backend=hier hier_allreduce_below_bytes=0 ranks=4\"\n1024 40\n16384 50\n65536 200\n");
}

// cuda_ipc_one_shot_below_bytes marks a crossover between cuda_ipc's own kernels: its
// configurations are also compared with each other, against the one-shot one (the largest value).
TEST(CommReport, SaysFromWhichSizeABackendsOtherAlgorithmWinsForItsOwnCrossover) {
  const ResultsDirectory directory = fresh_results_directory("comm_report_test_own");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 4},
          "sweep": {"backend": ["allreduce", "cuda_ipc"], "cuda_ipc_one_shot_below_bytes": [1073741824, 0]},
          "exclude": [{"backend": "allreduce", "cuda_ipc_one_shot_below_bytes": 0}]})",
      "exp.json");
  const std::vector<Point> points = expand(experiment);
  ASSERT_EQ(points.size(), 3U);
  const std::map<std::string, std::vector<double>> times = {
      {"allreduce 1073741824", {100, 200, 400}},
      {"cuda_ipc 1073741824", {10, 40, 200}},  // one-shot
      {"cuda_ipc 0", {20, 40, 100}},           // two-shot: 0.5x, 1x, 2x the one-shot's speed
  };
  for (const Point& point : points) {
    const std::string name =
        point.settings.backend + " " + to_json(point.settings)["cuda_ipc_one_shot_below_bytes"].dump();
    write_comm_record(directory, point, times.at(name));
  }
  EXPECT_EQ(crossover_summary(ResultSet::load(directory, experiment, points, true)),
            "Against allreduce (its median time over repeats / this one's, per size):\n"
            "  backend=cuda_ipc cuda_ipc_one_shot_below_bytes=1073741824: faster at every size (2.00-10.00x)\n"
            "  backend=cuda_ipc cuda_ipc_one_shot_below_bytes=0: faster at every size (4.00-5.00x)\n"
            "Against backend=cuda_ipc cuda_ipc_one_shot_below_bytes=1073741824 (its median time over repeats / "
            "this one's, per size):\n"
            "  backend=cuda_ipc cuda_ipc_one_shot_below_bytes=0: faster from 65536 B up (2.00x), 0.50-1.00x below\n");
}

TEST(CommReport, SaysNothingWithoutAllreducePointsToCompareWith) {
  const ResultsDirectory directory = fresh_results_directory("comm_report_test_alone");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 2}, "sweep": {"backend": ["ring", "shm"]}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  for (const Point& point : points) write_comm_record(directory, point, {10, 20, 30});
  EXPECT_EQ(crossover_summary(ResultSet::load(directory, experiment, points, true)), "");
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

// The "memory" column measures each backend against the rate its busiest rank can have: every
// core's share at once for the ring (all ranks copy together), one core's alone for the parameter
// server (rank 0 works while the others wait: against every core's share it read 122% at 16 ranks).
TEST(CommReport, TheMemoryLimitOfARankThatWorksAloneIsOneCoresRate) {
  const ResultsDirectory directory = fresh_results_directory("comm_limit_test");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 4, "ps_server_trains": true},
          "sweep": {"backend": ["ring", "ps"]}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  for (const Point& point : points) {
    PointRecord record = ok_record_of(point);
    Measurements measurements;
    measurements.kind = Kind::kComm;
    measurements.world_size = 4;
    measurements.hosts = {"a", "a", "a", "a"};
    MessageSizeMetrics size;
    size.bytes = 1 << 20;
    size.time_us_median = size.time_us_min = size.time_us_max = 1000;
    size.copy_probe_us = 100;     // every rank at once
    size.copy_probe_one_us = 25;  // rank 0 alone: 4 times the bandwidth
    measurements.comm = CommMeasurements{{size}};
    record.measurements = measurements;
    write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
  }
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  const std::string csv = CommReport().tables(set).at("summary.csv");
  // ring: 9 (p-1)/p = 6.75 bytes per byte at 100 us per 3: 225 us of 1000. ps: 6 (p-1) = 18 at 25 us
  // per 3: 150 us (600 at every core's rate).
  EXPECT_NE(csv.find(",ring,"), std::string::npos) << csv;
  const auto row_of = [&csv](const std::string& backend) {
    const auto at = csv.find("," + backend + ",");
    return csv.substr(at, csv.find('\n', at) - at);
  };
  EXPECT_NE(row_of("ring").find(",0.225,"), std::string::npos) << row_of("ring");
  EXPECT_NE(row_of("ps").find(",0.15,"), std::string::npos) << row_of("ps");
  EXPECT_EQ(CommReport().console_table(set).find("memory above 100%"), std::string::npos)
      << "both within their limits: nothing to explain";
}

// A comm record of `point` on one host whose reductions of 16 MiB take 1000 us, with the copy
// probe at `copy_probe_us`; returns its id.
std::string write_16_mib_record(const ResultsDirectory& directory, const Point& point, double copy_probe_us,
                                std::optional<Oversubscription> oversubscribed = std::nullopt) {
  PointRecord record = ok_record_of(point);
  Measurements measurements;
  measurements.oversubscribed = oversubscribed;
  measurements.kind = Kind::kComm;
  measurements.world_size = point.settings.ranks;
  measurements.hosts.assign(static_cast<std::size_t>(point.settings.ranks), "a");
  MessageSizeMetrics size;
  size.bytes = 1 << 24;
  size.time_us_median = size.time_us_min = size.time_us_max = 1000;
  size.copy_probe_us = copy_probe_us;
  measurements.comm = CommMeasurements{{size}};
  record.measurements = measurements;
  write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
  return record.id;
}

// A fraction above 100% is not hidden or capped: the console says which rows, and what the limit is.
TEST(CommReport, AMemoryFractionAboveItsLimitIsNamedAndExplained) {
  const ResultsDirectory directory = fresh_results_directory("comm_above_limit_test");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 2, "backend": "shm"}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  // shm moves 2 bytes per byte against the probe's 3: 1020 us, 102%.
  const std::string id = write_16_mib_record(directory, points[0], 1530);
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  const std::string table = CommReport().console_table(set);
  EXPECT_NE(table.find("memory above 100% of its limit: " + id + " shm at 16777216 B (102%). The limit is the "
                       "backend's modelled memory traffic at the rate of this run's copy and a[i] += b[i] probes"),
            std::string::npos)
      << table;
}

// Ranks waiting for a core lengthen a comm run's reductions; it has no efficiency split to blame.
TEST(CommReport, AnOversubscribedRunSaysWhatTheWaitForACoreDoesToItsTimes) {
  const ResultsDirectory directory = fresh_results_directory("comm_oversubscribed_test");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 4, "backend": "shm"}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  const std::string id = write_16_mib_record(directory, points[0], 1530, Oversubscription{"a", 4, 1, 2});
  const std::string text = console_text(ResultSet::load(directory, experiment, points, true));
  EXPECT_NE(text.find("oversubscribed: 4 ranks × 1 thread on 2 cores (" + id +
                      "): ranks wait for a core, which lengthens the reductions' times"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("efficiency split"), std::string::npos) << text;
}

// One rank moves nothing, whatever the backend: no memory figure, so none above its limit (shm's
// and hier's read 109% of a limit of nothing).
TEST(CommReport, OneRankHasNoMemoryLimit) {
  const ResultsDirectory directory = fresh_results_directory("comm_one_rank_test");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 1}, "sweep": {"backend": ["shm", "hier", "ring"]}})",
      "exp.json");
  const std::vector<Point> points = expand(experiment);
  for (const Point& point : points) write_16_mib_record(directory, point, 1530);
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  const std::string table = CommReport().console_table(set);
  EXPECT_EQ(table.find("memory above"), std::string::npos) << table;
  const std::string csv = CommReport().tables(set).at("summary.csv");
  const auto header = csv.substr(0, csv.find('\n'));
  const auto column = std::count(header.begin(), header.begin() + header.find("memory_limit_fraction"), ',');
  for (std::size_t at = csv.find('\n') + 1; at < csv.size(); at = csv.find('\n', at) + 1) {
    std::string line = csv.substr(at, csv.find('\n', at) - at);
    for (int i = 0; i < column; ++i) line = line.substr(line.find(',') + 1);
    EXPECT_EQ(line.substr(0, line.find(',')), "") << csv;
  }
}

}  // namespace
}  // namespace harness

namespace harness {
namespace {

// On device "cuda" the table has a "gpu" column: each backend against the limit of the way its
// buffers take. Staged (ring): the slower of the copies out and back; device pointers (allreduce
// to a CUDA-aware MPI): its device memory traffic at the device copy's rate, and then no host
// "memory" figure, since its buffers never touch host memory.
TEST(CommReport, OnAGpuEachBackendIsShownAgainstTheLimitOfItsPath) {
  const ResultsDirectory directory = fresh_results_directory("comm_gpu_limit_test");
  const Experiment experiment = parse_experiment(
      R"({"name": "exp", "settings": {"kind": "comm", "ranks": 2, "device": "cuda"},
          "sweep": {"backend": ["ring", "allreduce"]}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  for (const Point& point : points) {
    PointRecord record = ok_record_of(point);
    Measurements measurements;
    measurements.kind = Kind::kComm;
    measurements.world_size = 2;
    measurements.hosts = {"a", "a"};
    measurements.exchange_path = point.settings.backend == "ring" ? "pinned host staging" : "device pointers";
    MessageSizeMetrics size;
    size.bytes = 64 << 20;
    size.time_us_median = size.time_us_max = 10000;
    size.time_us_min = point.settings.backend == "ring" ? 9000 : 30;  // allreduce once beat the probe
    size.copy_probe_us = 5000;
    size.device_to_host_probe_us = 1300;
    size.host_to_device_probe_us = 1500;
    size.device_copy_probe_us = 50;
    measurements.comm = CommMeasurements{{size}};
    record.measurements = measurements;
    write_file_atomically(directory.record_path(record.id), to_json(record).dump(1));
  }
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  // The probes survive the record's round trip.
  ASSERT_EQ(set.runs().size(), 2U);
  const MessageSizeMetrics& read = set.runs()[0].record.measurements->comm->sizes[0];
  EXPECT_EQ(read.device_to_host_probe_us, 1300);
  EXPECT_EQ(read.host_to_device_probe_us, 1500);
  EXPECT_EQ(read.device_copy_probe_us, 50);

  const std::string table = CommReport().console_table(set);
  const auto line_of = [&table](const std::string& backend) {
    const auto at = table.find(" " + backend + " ");
    return table.substr(table.rfind('\n', at) + 1, table.find('\n', at) - table.rfind('\n', at) - 1);
  };
  EXPECT_NE(table.find("gpu"), std::string::npos) << table;
  // ring: 1500 us of 10000 is 15% of the copies' limit; its memory figure is there (9 (p-1)/p =
  // 4.5 bytes per byte at 5000 us per 3: 7500 us, 75%).
  EXPECT_NE(line_of("ring").find(" 75 "), std::string::npos) << table;
  EXPECT_EQ(line_of("ring").substr(line_of("ring").find_last_not_of(' ') - 1), "15") << table;
  // allreduce: 2 bytes per byte at 50 us per 2 is 50 us, but one reduction took 30 us: the limit
  // is 30 us, 0% of 10000 at this precision, marked; no memory figure.
  EXPECT_EQ(line_of("allreduce").substr(line_of("allreduce").find_last_not_of(' ') - 1), "0*") << table;
  EXPECT_NE(table.find("gpu: * the backend's fastest reduction beat"), std::string::npos) << table;

  const std::string csv = CommReport().tables(set).at("summary.csv");
  const auto row_of = [&csv](const std::string& backend) {
    const auto at = csv.find("," + backend + ",");
    return csv.substr(at, csv.find('\n', at) - at);
  };
  EXPECT_NE(csv.find("memory_limit_fraction,device_to_host_probe_us,host_to_device_probe_us,device_copy_probe_us,"
                     "gpu_limit,gpu_limit_us,gpu_limit_fraction,"),
            std::string::npos)
      << csv;
  EXPECT_NE(row_of("ring").find(",0.75,1300,1500,50,host-device copies,1500,0.15,"), std::string::npos) << row_of("ring");
  EXPECT_NE(row_of("allreduce").find(",,1300,1500,50,its fastest reduction,30,0.003,"), std::string::npos)
      << row_of("allreduce");
}

// On the CPU there is no "gpu" column, and no GPU figure in summary.csv.
TEST(CommReport, OnTheCpuThereIsNoGpuColumn) {
  const ResultsDirectory directory = fresh_results_directory("comm_cpu_limit_test");
  const Experiment experiment =
      parse_experiment(R"({"name": "exp", "settings": {"kind": "comm", "ranks": 2}, "sweep": {"backend": ["ring"]}})", "exp.json");
  const std::vector<Point> points = expand(experiment);
  for (const Point& point : points) write_comm_record(directory, point, {10, 20, 30});
  const ResultSet set = ResultSet::load(directory, experiment, points, true);
  EXPECT_EQ(CommReport().console_table(set).find("gpu"), std::string::npos) << CommReport().console_table(set);
  const std::string csv = CommReport().tables(set).at("summary.csv");
  EXPECT_NE(csv.find(",gpu_limit,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("host-device"), std::string::npos) << csv;
  // What was not measured (the GPU's probes, a link between nodes; here every probe) is empty,
  // never a measured 0: the row's numbers are its time's and busbw's only.
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  const auto fields = [](const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string field; std::getline(in, field, ',');) out.push_back(field);
    if (!line.empty() && line.back() == ',') out.emplace_back();
    return out;
  };
  const std::vector<std::string> names = fields(header);
  const std::vector<std::string> values = fields(row);
  ASSERT_EQ(names.size(), values.size()) << header << "\n" << row;
  for (const char* column : {"reduce_probe_us", "copy_probe_us", "device_to_host_probe_us", "device_copy_probe_us",
                             "intra_node_gbps", "inter_node_gbps"}) {
    const auto at = std::find(names.begin(), names.end(), column);
    ASSERT_NE(at, names.end()) << column;
    EXPECT_EQ(values[static_cast<std::size_t>(at - names.begin())], "") << column << " in " << row;
  }
}

}  // namespace
}  // namespace harness
