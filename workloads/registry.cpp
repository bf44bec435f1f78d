#include "workloads/registry.h"

#include <fmt/format.h>

#include "harness/errors.h"
#include "harness/name_table.h"
#include "workloads/iris_mlp.h"
#include "workloads/mnist_cnn.h"

namespace harness {

const std::vector<WorkloadInfo>& workload_table() {
  static const std::vector<WorkloadInfo> table = {
      {"iris_mlp", "Iris 4-30-20-3 sigmoid MLP, squared error on one-hot labels, plain SGD",
       iris_mlp_train_samples, make_iris_mlp},
      {"mnist_cnn", "PyTorch MNIST example CNN (2 conv, 2 fc, no dropout) on MNIST-format data",
       mnist_cnn_train_samples, make_mnist_cnn},
  };
  return table;
}

const WorkloadInfo& find_workload(std::string_view name) {
  return find_by_name(workload_table(), name, "workload");
}

}  // namespace harness
