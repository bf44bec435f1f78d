// What must agree for harness check to compare two records' timings.
#include "harness/check/comparability.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace harness {
namespace {

PointRecord record_on(std::vector<std::string> hosts, std::string mpi_library, std::string device = "cpu") {
  PointRecord record;
  record.settings.device = std::move(device);
  Measurements measurements;
  measurements.hosts = std::move(hosts);
  measurements.mpi_library = std::move(mpi_library);
  record.measurements = measurements;
  return record;
}

TEST(Comparability, TheMpiReleaseIsTheLibraryToItsMinorVersion) {
  EXPECT_EQ(mpi_release("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4"), "Open MPI v4.1");
  EXPECT_EQ(mpi_release(std::string("Open MPI v4.1.6, package: Ubuntu\0", 33)), "Open MPI v4.1");
  EXPECT_EQ(mpi_release("MPICH Version: 4.0.2"), "MPICH Version: 4.0");
  EXPECT_EQ(mpi_release("MPICH Version:\t4.0.2\nMPICH Release date: ..."), "MPICH Version: 4.0");  // as MPICH says it
  EXPECT_EQ(mpi_release("some MPI"), "some MPI");
}

TEST(Comparability, HostsLibraryReleaseDeviceAndOldSchemasKeepTimingsApart) {
  const PointRecord debian = record_on({"a", "a"}, "Open MPI v4.1.4, package: Debian");
  EXPECT_EQ(incomparable(debian, record_on({"b", "b"}, "Open MPI v4.1.6, package: Ubuntu")), "")
      << "another patch release and other host names: comparable";
  EXPECT_EQ(incomparable(debian, record_on({"a", "b"}, "Open MPI v4.1.4")), "1 host(s) against 2");
  EXPECT_EQ(incomparable(debian, record_on({"a"}, "Open MPI v5.0.3")),
            "MPI library \"Open MPI v4.1\" against \"Open MPI v5.0\"");
  EXPECT_EQ(incomparable(debian, record_on({"a"}, "Open MPI v4.1.4", "cuda")), "device cpu against cuda");
  // A study of MPI libraries asks for it (harness check --allow-other-mpi); nothing else gives way.
  const PointRecord mpich = record_on({"a"}, "MPICH Version:\t4.0.2");
  EXPECT_EQ(incomparable(debian, mpich), "MPI library \"Open MPI v4.1\" against \"MPICH Version: 4.0\"");
  EXPECT_EQ(incomparable(debian, mpich, true), "");
  EXPECT_EQ(incomparable(debian, record_on({"a"}, "MPICH Version: 4.0.2", "cuda"), true), "device cpu against cuda");
  PointRecord old = debian;
  old.schema_version = kTimingsComparableSince - 1;
  EXPECT_EQ(incomparable(old, debian),
            "record schema " + std::to_string(old.schema_version) + " against " + std::to_string(kRecordSchemaVersion));
  // A training step's times are one rank's before kStepMeansSince, the ranks' means from it; a
  // comm record's timings did not change.
  PointRecord one_rank_steps = debian;
  one_rank_steps.schema_version = kStepMeansSince - 1;
  ASSERT_EQ(debian.settings.kind, Kind::kTrain);
  EXPECT_EQ(incomparable(one_rank_steps, debian),
            fmt::format("record schema {} against {} (a training step's times became the training ranks' means in {})",
                        kStepMeansSince - 1, kRecordSchemaVersion, kStepMeansSince));
  PointRecord comm = debian;
  comm.settings.kind = Kind::kComm;
  PointRecord older_comm = one_rank_steps;
  older_comm.settings.kind = Kind::kComm;
  EXPECT_EQ(incomparable(older_comm, comm), "");
}

// In a two-build run the running harness writes both records (both carry its record schema),
// while each build's rank program wrote its measurements: an older base's steps are one rank's.
TEST(Comparability, TheSchemaThatCountsIsTheMeasurementsOwn) {
  const PointRecord head = record_on({"a", "a"}, "Open MPI v4.1.4");
  PointRecord base = head;
  ASSERT_EQ(base.schema_version, kRecordSchemaVersion);
  base.measurements->schema_version = kStepMeansSince - 1;
  EXPECT_EQ(timings_schema(base), kStepMeansSince - 1);
  EXPECT_EQ(incomparable(head, base),
            fmt::format("record schema {} against {} (a training step's times became the training ranks' means in {})",
                        kRecordSchemaVersion, kStepMeansSince - 1, kStepMeansSince));
  base.measurements->schema_version = kTimingsComparableSince - 1;
  base.settings.kind = Kind::kComm;
  PointRecord comm_head = head;
  comm_head.settings.kind = Kind::kComm;
  EXPECT_EQ(incomparable(comm_head, base),
            fmt::format("record schema {} against {}", kRecordSchemaVersion, kTimingsComparableSince - 1));
  // A failed record has no measurements: its own schema.
  PointRecord failed;
  failed.schema_version = 9;
  EXPECT_EQ(timings_schema(failed), 9);
}

}  // namespace
}  // namespace harness
