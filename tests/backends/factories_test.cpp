// The two halves of the backend and workload tables name the same entries: what the orchestrator
// knows (registry.h, no LibTorch) and what the rank program constructs (factories.h).
#include "backends/factories.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/registry.h"
#include "harness/common/errors.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

TEST(Factories, EveryBackendHasItsConstructorInTableOrder) {
  std::vector<std::string> known;
  for (const BackendInfo& info : backend_table()) known.emplace_back(info.name);
  std::vector<std::string> constructed;
  for (const BackendFactory& factory : backend_factories()) {
    constructed.emplace_back(factory.name);
    EXPECT_NE(factory.make, nullptr) << factory.name;
  }
  EXPECT_EQ(constructed, known);
}

TEST(Factories, EverySgdWorkloadAndNoOtherHasItsFactoryInTableOrder) {
  std::vector<std::string> sgd;
  for (const WorkloadInfo& info : workload_table()) {
    if (info.algorithm == Algorithm::kDataParallelSgd) sgd.emplace_back(info.name);
  }
  std::vector<std::string> made;
  for (const WorkloadFactory& factory : workload_factories()) {
    made.emplace_back(factory.name);
    EXPECT_NE(factory.make, nullptr) << factory.name;
  }
  EXPECT_EQ(made, sgd);
}

TEST(Factories, AWorkloadWithoutAFactoryIsRefusedByName) {
  PointSettings settings;
  settings.workload = "kmeans";  // Lloyd's iterations: kmeans_driver.h, not a Workload
  try {
    make_workload(settings, kNoCudaDevice);
    FAIL() << "kmeans has no SGD workload";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("\"kmeans\""), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace harness
