#include "harness/common/machine.h"

#include <gtest/gtest.h>

namespace harness {
namespace {

TEST(Oversubscription, RanksWhoseThreadsOutnumberTheirMachinesCoresAreFound) {
  // Unbound ranks (every CPU allowed): 4 ranks of 1 thread on 2 cores.
  const std::vector<int> both = {0, 1};
  EXPECT_EQ(oversubscription({{"vm", both}, {"vm", both}, {"vm", both}, {"vm", both}}, 1),
            (Oversubscription{"vm", 4, 1, 2}));
  EXPECT_EQ(oversubscription({{"vm", both}, {"vm", both}}, 1), std::nullopt);
  // 2 threads each: 2 ranks fill 2 cores twice over.
  EXPECT_EQ(oversubscription({{"vm", both}, {"vm", both}}, 2), (Oversubscription{"vm", 2, 2, 2}));
  // Two ranks bound to one core are oversubscribed although the machine has two.
  EXPECT_EQ(oversubscription({{"vm", {0}}, {"vm", {0}}}, 1), (Oversubscription{"vm", 2, 1, 1}));
  EXPECT_EQ(oversubscription({{"vm", {0}}, {"vm", {1}}}, 1), std::nullopt);
  // A rank bound to one core that starts 4 threads runs them in turns on it.
  EXPECT_EQ(oversubscription({{"vm", {0}}, {"vm", {1}}}, 4), (Oversubscription{"vm", 2, 4, 2}));
  EXPECT_EQ(oversubscription({{"vm", {0}}}, 2), (Oversubscription{"vm", 1, 2, 1}));
  // Machines apart: the most oversubscribed one is named.
  EXPECT_EQ(oversubscription({{"a", both}, {"a", both}, {"b", both}, {"b", both}, {"b", both}, {"b", both},
                              {"b", both}},
                             1),
            (Oversubscription{"b", 5, 1, 2}));
  EXPECT_EQ(describe_oversubscription({"b", 5, 1, 2}), "5 ranks × 1 thread on 2 cores");
  EXPECT_EQ(describe_oversubscription({"b", 1, 4, 1}, true), "1 rank × 4 threads on 1 core of b");
}

TEST(Oversubscription, ThisProcessMayRunOnAtLeastOneCpu) {
  EXPECT_FALSE(allowed_cpus().empty());
  EXPECT_FALSE(physical_host_name().empty());
}

}  // namespace
}  // namespace harness
