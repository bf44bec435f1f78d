#include "harness/common/machine.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

RankCpus on(const std::string& host, const std::vector<int>& cpus, double quota_cpus = 0,
            const std::string& cgroup = "") {
  return {host, cpus, quota_cpus, cgroup};
}

TEST(Oversubscription, RanksWhoseThreadsOutnumberTheirMachinesCoresAreFound) {
  // Unbound ranks (every CPU allowed): 4 ranks of 1 thread on 2 cores.
  const std::vector<int> both = {0, 1};
  EXPECT_EQ(oversubscription({on("vm", both), on("vm", both), on("vm", both), on("vm", both)}, 1),
            (Oversubscription{"vm", 4, 1, 2}));
  EXPECT_EQ(oversubscription({on("vm", both), on("vm", both)}, 1), std::nullopt);
  // 2 threads each: 2 ranks fill 2 cores twice over.
  EXPECT_EQ(oversubscription({on("vm", both), on("vm", both)}, 2), (Oversubscription{"vm", 2, 2, 2}));
  // Two ranks bound to one core are oversubscribed although the machine has two.
  EXPECT_EQ(oversubscription({on("vm", {0}), on("vm", {0})}, 1), (Oversubscription{"vm", 2, 1, 1}));
  EXPECT_EQ(oversubscription({on("vm", {0}), on("vm", {1})}, 1), std::nullopt);
  // A rank bound to one core that starts 4 threads runs them in turns on it.
  EXPECT_EQ(oversubscription({on("vm", {0}), on("vm", {1})}, 4), (Oversubscription{"vm", 2, 4, 2}));
  EXPECT_EQ(oversubscription({on("vm", {0})}, 2), (Oversubscription{"vm", 1, 2, 1}));
  // Machines apart: the most oversubscribed one is named.
  EXPECT_EQ(
      oversubscription(
          {on("a", both), on("a", both), on("b", both), on("b", both), on("b", both), on("b", both), on("b", both)}, 1),
      (Oversubscription{"b", 5, 1, 2}));
  EXPECT_EQ(describe_oversubscription({"b", 5, 1, 2}), "5 ranks × 1 thread on 2 cores");
  EXPECT_EQ(describe_oversubscription({"b", 1, 4, 1}, true), "1 rank × 4 threads on 1 core of b");
}

// A cgroup CPU quota (docker --cpus) lowers the cores of a machine whose every rank has one: the
// quotas of their cgroups together, rounded down.
TEST(Oversubscription, RanksUnderACpuQuotaHaveItsCores) {
  const std::vector<int> four = {0, 1, 2, 3};
  EXPECT_EQ(oversubscription({on("vm", four, 2, "/job"), on("vm", four, 2, "/job"), on("vm", four, 2, "/job")}, 1),
            (Oversubscription{"vm", 3, 1, 2}));
  EXPECT_EQ(oversubscription({on("vm", four, 2, "/job"), on("vm", four, 2, "/job")}, 1), std::nullopt);
  // A cgroup per rank, 1.5 CPUs each: 3 cores between them.
  EXPECT_EQ(oversubscription({on("vm", four, 1.5, "/task0"), on("vm", four, 1.5, "/task1")}, 2),
            (Oversubscription{"vm", 2, 2, 3}));
  // A rank without a quota can use every CPU of its mask.
  EXPECT_EQ(oversubscription({on("vm", four, 1, "/job"), on("vm", four)}, 2), std::nullopt);
  EXPECT_EQ(oversubscription({on("vm", four, 0.5, "/job")}, 1), std::nullopt);  // 1 thread, 1 core at least
}

TEST(Oversubscription, ThisProcessMayRunOnAtLeastOneCpu) {
  EXPECT_FALSE(allowed_cpus().empty());
  EXPECT_FALSE(physical_host_name().empty());
}

}  // namespace
}  // namespace harness
