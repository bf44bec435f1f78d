#include "workloads/factories.h"

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "workloads/iris_mlp.h"
#include "workloads/mnist_cnn.h"
#include "workloads/resnet.h"
#include "workloads/gpt.h"
#include "workloads/torchscript.h"
#include "workloads/workload.h"

namespace harness {

const std::vector<WorkloadFactory>& workload_factories() {
  static const std::vector<WorkloadFactory> factories = {
      {"iris_mlp", make_iris_mlp},
      {"mnist_cnn", make_mnist_cnn},
      {"resnet", make_resnet},
      {"torchscript", make_torchscript},
      {"gpt", make_gpt},
  };
  return factories;
}

std::unique_ptr<Workload> make_workload(const PointSettings& settings, int cuda_device) {
  for (const WorkloadFactory& factory : workload_factories()) {
    if (factory.name == settings.workload) return factory.make(settings, cuda_device);
  }
  throw ConfigError(fmt::format("workload: \"{}\" is not trained by SGD in this build (workloads/factories.cpp)",
                                settings.workload));
}

}  // namespace harness
