#include "workloads/registry.h"

#include <fmt/format.h>

#include "harness/errors.h"
#include "workloads/iris_mlp.h"

namespace harness {

const std::vector<WorkloadInfo>& workload_table() {
  static const std::vector<WorkloadInfo> table = {
      {"iris_mlp", "Iris 4-30-20-3 sigmoid MLP, squared error on one-hot labels, plain SGD",
       iris_mlp_train_samples, make_iris_mlp},
  };
  return table;
}

const WorkloadInfo& find_workload(std::string_view name) {
  std::vector<std::string_view> names;
  for (const auto& info : workload_table()) {
    if (info.name == name) return info;
    names.push_back(info.name);
  }
  throw ConfigError(fmt::format("unknown workload \"{}\" (expected one of: {})", name,
                                fmt::join(names, ", ")));
}

}  // namespace harness
