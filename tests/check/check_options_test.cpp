// Thresholds, floors and references of `harness check`, from the command line and the experiment.
#include "harness/check/check_options.h"

#include <gtest/gtest.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(CheckOptions, ThresholdsAreFractionsOrPercentsAndFloorsAreInTheMetricsUnit) {
  CheckOptions options = default_check_options();
  EXPECT_DOUBLE_EQ(options.limits.at("busbw").threshold, 0.15);
  apply_threshold_argument(options, "busbw=20%");
  apply_threshold_argument(options, "comm_time=0.2");
  apply_floor_argument(options, "reduce_time=2");
  EXPECT_DOUBLE_EQ(options.limits.at("busbw").threshold, 0.20);
  EXPECT_DOUBLE_EQ(options.limits.at("comm_time").threshold, 0.2);
  EXPECT_DOUBLE_EQ(options.limits.at("reduce_time").floor, 2);
  apply_check_block(options, Json::parse(R"({"metrics": {"step_time": {"threshold": "7.5%", "floor": 0.5}},
                                            "against": {"backend": "ring"}})"),
                    "exp.json: check");
  EXPECT_DOUBLE_EQ(options.limits.at("step_time").threshold, 0.075);
  EXPECT_DOUBLE_EQ(options.limits.at("step_time").floor, 0.5);
  EXPECT_EQ(options.against, Json::parse(R"({"backend": "ring"})"));
}

TEST(CheckOptions, MistakesAreOneLineNamingWhereAndWhat) {
  CheckOptions options = default_check_options();
  EXPECT_EQ(error_of([&] { apply_threshold_argument(options, "bussbw=0.1"); }),
            "--threshold: unknown metric \"bussbw\" (did you mean \"busbw\"? expected one of: comm_time, "
            "exposed_comm, comm_fraction, step_time, throughput, time_to_target, busbw, reduce_time)");
  EXPECT_EQ(error_of([&] { apply_threshold_argument(options, "busbw"); }),
            "--threshold \"busbw\": expected METRIC=VALUE, such as comm_time=0.15");
  EXPECT_EQ(error_of([&] { apply_threshold_argument(options, "busbw=ten"); }),
            "--threshold busbw: expected a relative change such as 0.15 or \"15%\", got \"ten\"");
  EXPECT_EQ(error_of([&] { apply_threshold_argument(options, "busbw=1.5"); }),
            "--threshold busbw: expected a relative change below 1 (100%): higher busbw is better, got 1.5");
  EXPECT_EQ(error_of([&] { apply_floor_argument(options, "busbw=-1"); }),
            "--floor busbw: expected a non-negative number, got -1");
  EXPECT_NE(error_of([&] { select_metrics(options, "busbw,nope"); }).find("--metrics: unknown metric \"nope\""),
            std::string::npos);
  EXPECT_EQ(error_of([&] { apply_check_block(options, Json::parse(R"({"metric": {}})"), "x.json: check"); }),
            "x.json: check: unknown key \"metric\" (expected against or metrics)");
  EXPECT_EQ(error_of([&] { read_against(Json::parse(R"({"ranks": "two"})"), "--against"); }),
            "--against.ranks: expected a positive integer (at most 4096), got \"two\"");
  EXPECT_EQ(error_of([&] { read_against(Json::parse("[]"), "--against"); }),
            "--against: expected an object of setting values, got []");
}

TEST(CheckOptions, AgainstValuesAreNormalisedAsRecordsStoreThem) {
  const Json values = read_against(Json::parse(R"({"ranks": 2, "bucket_mb": 25})"), "--against");
  EXPECT_EQ(values["ranks"].dump(), "2");
  EXPECT_EQ(values["bucket_mb"].dump(), "25.0");
}

}  // namespace
}  // namespace harness
