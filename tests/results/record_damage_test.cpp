// A negative or non-finite time in a record is no measurement: the record becomes a failed
// repeat whose reason names the value, and reports never table it.
#include "harness/results/record_damage.h"

#include <gtest/gtest.h>

#include <limits>

namespace harness {
namespace {

PointRecord train_record(std::vector<double> step_s) {
  PointRecord record;
  record.status = PointStatus::kOk;
  Measurements measurements;
  TrainMeasurements train;
  train.steps.step_s = std::move(step_s);
  train.steps.compute_s = {0.5, 0.5};
  train.steps.imbalance_s = std::vector<double>{-1e-18, 0.0};  // rounding, not damage
  train.train_time_s = 2;
  measurements.train = train;
  record.measurements = measurements;
  return record;
}

TEST(RecordDamage, ANegativeStepTimeMakesTheRecordAFailedRepeat) {
  PointRecord record = train_record({1.0, -1.0});
  EXPECT_TRUE(mark_damaged_record(record));
  EXPECT_EQ(record.status, PointStatus::kFailed);
  EXPECT_EQ(record.reason,
            "damaged record: measurements.train.steps.step_s[1] is -1 (expected a finite time >= 0)");
}

TEST(RecordDamage, ANonFiniteTimeIsDamageToo) {
  PointRecord record = train_record({1.0, std::numeric_limits<double>::infinity()});
  EXPECT_TRUE(mark_damaged_record(record));
  EXPECT_EQ(record.reason,
            "damaged record: measurements.train.steps.step_s[1] is inf (expected a finite time >= 0)");

  PointRecord comm;
  comm.status = PointStatus::kOk;
  Measurements measurements;
  CommMeasurements sizes;
  sizes.sizes.push_back({4096, std::nan(""), 1, 2, 0.5, 0.5, 0});
  measurements.comm = sizes;
  comm.measurements = measurements;
  EXPECT_EQ(damaged_timing(*comm.measurements),
            "measurements.sizes[0].time_us_median is nan (expected a finite time >= 0)");
}

TEST(RecordDamage, ANonFiniteLeadOrANegativeSampledComputeIsDamage) {
  PointRecord lead = train_record({1.0, 1.1});
  lead.measurements->train->steps.slowest_rank = std::vector<int>{0, 0};
  lead.measurements->train->steps.slowest_lead_s = std::vector<double>{0.0, std::nan("")};
  EXPECT_EQ(damaged_timing(*lead.measurements),
            "measurements.train.steps.slowest_lead_s[1] is nan (expected a finite time >= 0)");
  PointRecord sample = train_record({1.0, 1.1});
  sample.measurements->train->steps.rank_compute = RankComputeSample{1, {0, 1}, {{0.1, 0.2}, {0.1, -0.2}}};
  EXPECT_EQ(damaged_timing(*sample.measurements),
            "measurements.train.steps.rank_compute.compute_s[1][1] is -0.2 (expected a finite time >= 0)");
}

TEST(RecordDamage, SoundAndAlreadyFailedRecordsAreLeftAsTheyAre) {
  PointRecord sound = train_record({1.0, 1.1});
  EXPECT_FALSE(mark_damaged_record(sound));
  EXPECT_EQ(sound.status, PointStatus::kOk);
  EXPECT_TRUE(sound.reason.empty());
  PointRecord timed_out = train_record({1.0, -1.0});
  timed_out.status = PointStatus::kTimeout;
  timed_out.reason = "mpirun timed out";
  EXPECT_FALSE(mark_damaged_record(timed_out));
  EXPECT_EQ(timed_out.reason, "mpirun timed out");
}

}  // namespace
}  // namespace harness
