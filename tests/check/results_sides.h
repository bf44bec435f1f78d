// Results sides made in memory for the tests of `harness check`'s comparisons: comm records of
// one size per backend, by repeat, failed or preempted where the time says so.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "harness/check/comparison.h"
#include "harness/common/errors.h"

namespace harness::check_test {

// A time in side_of's records that stands for a repeat its job's preemption ended.
constexpr double kPreempted = -2;

// A comm benchmark record of `backend` at one size, `time_us` per reduction (or failed).
inline PointRecord comm_record(const std::string& backend, int repeat, double time_us, bool ok = true) {
  PointRecord record;
  record.settings.kind = Kind::kComm;
  record.settings.ranks = 2;
  record.settings.backend = backend;
  record.repeat = repeat;
  record.id = "p-" + backend;
  record.status = ok ? PointStatus::kOk : time_us == kPreempted ? PointStatus::kPreempted : PointStatus::kFailed;
  record.reason = ok ? "" : time_us == kPreempted ? "job 12 was preempted" : "rank 1: Killed";
  if (ok) {
    Measurements measurements;
    measurements.kind = Kind::kComm;
    measurements.hosts = {"vm", "vm"};
    measurements.mpi_library = "Open MPI v4.1.4, package: Debian OpenMPI";
    CommMeasurements comm;
    comm.sizes.push_back({4096, time_us, time_us, time_us, 4096 / time_us / 1000, 4096 / time_us / 1000, 0});
    measurements.comm = comm;
    record.measurements = measurements;
  }
  return record;
}

// A results side with one configuration per backend and these records (backend, repeat, time;
// a negative time: failed, kPreempted: preempted; NaN: an ok record that measured NaN; a backend
// listed without records: none).
inline ResultsSide side_of(const std::string& dir, const std::vector<std::tuple<std::string, int, double>>& records,
                    const std::vector<std::string>& backends) {
  ResultsSide side;
  side.dir = dir;
  side.canonical_dir = dir;
  for (const auto& backend : backends) {
    Configuration configuration;
    configuration.settings.kind = Kind::kComm;
    configuration.settings.ranks = 2;
    configuration.settings.backend = backend;
    configuration.identity = configuration_identity(configuration.settings);
    configuration.match_identity = configuration_identity(configuration.settings, true);
    configuration.first_id = "p-" + backend;
    configuration.label = "comm " + backend;
    side.configurations.push_back(configuration);
  }
  for (const auto& [backend, repeat, time] : records) {
    side.records.push_back(comm_record(backend, repeat, time, !(time < 0)));
    for (auto& configuration : side.configurations) {
      if (configuration.settings.backend == backend) add_record(configuration, repeat, side.records.back());
    }
  }
  return side;
}

inline CheckOptions against_allreduce() {
  CheckOptions options = default_check_options();
  options.against = read_against(Json::parse(R"({"backend": "allreduce"})"), "--against");
  options.against_where = "--against";
  return options;
}

// compare_results refuses with `message`: a check that compared nothing is bad input (exit 2).
inline void expect_nothing_compared(const ResultsSide& current, const ResultsSide* baseline, const CheckOptions& options,
                             const std::string& message) {
  try {
    compare_results(current, baseline, options, false);
    ADD_FAILURE() << "compared something; expected: " << message;
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

}  // namespace harness::check_test
