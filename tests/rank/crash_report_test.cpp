// A crashing rank says where: the report names the caller of a null function pointer, which a
// backtrace cannot reach (CI once saw only "Segmentation fault" and a single libc frame).
#include <gtest/gtest.h>
#include <signal.h>

#include "harness/rank/crash_report.h"

namespace harness {
namespace {

TEST(CrashReport, ACallThroughANullPointerNamesItsCallerAndEndsWithTheSignal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        install_crash_report(7);
        void (*volatile null_function)() = nullptr;
        null_function();
      },
      testing::KilledBySignal(SIGSEGV),
      "harness worker \\(rank 7\\): SIGSEGV \\(segmentation fault\\) at address 0x0\n"
      "  instruction: 0x0\n"
      "  called from: 0x[0-9a-f]+ \\([^)]*harness_rank_unit_tests\\+0x[0-9a-f]+");
}

}  // namespace
}  // namespace harness
