#include "backends/gradient_sync.h"

#include <fmt/format.h>

#include "backends/gloo_allreduce.h"
#include "backends/mpi_allreduce.h"
#include "backends/parameter_server.h"
#include "backends/ring_allreduce.h"
#include "backends/shared_memory_allreduce.h"
#include "harness/common/errors.h"
#include "harness/common/name_table.h"

namespace harness {

const std::vector<BackendInfo>& backend_table() {
  static const std::vector<BackendInfo> table = {
      {"allreduce", "MPI_Allreduce (in place, SUM) on one fused buffer",
       [](MPI_Comm comm) -> std::unique_ptr<GradientSync> {
         return std::make_unique<MpiAllreduce>(comm);
       }},
      {"ring", "bandwidth-optimal ring allreduce (reduce-scatter + allgather) over MPI_Sendrecv",
       [](MPI_Comm comm) -> std::unique_ptr<GradientSync> {
         return std::make_unique<RingAllreduce>(comm);
       }},
      {"ps", "parameter server: rank 0 receives, sums and sends back with MPI_Send/MPI_Recv",
       [](MPI_Comm comm) -> std::unique_ptr<GradientSync> {
         return std::make_unique<ParameterServer>(comm);
       }},
      {"shm",
       "zero-copy shared-memory allreduce: each rank sums its slice of every rank's buffer in "
       "place (ranks on one node)",
       [](MPI_Comm comm) -> std::unique_ptr<GradientSync> {
         return std::make_unique<SharedMemoryAllreduce>(comm);
       }},
      {"gloo", "Gloo allreduce through LibTorch's c10d::ProcessGroupGloo (what PyTorch DDP uses)",
       make_gloo_allreduce},
  };
  return table;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& info : backend_table()) names.emplace_back(info.name);
  return names;
}

const BackendInfo& find_backend(std::string_view name) {
  return find_by_name(backend_table(), name, "backend");
}

std::unique_ptr<GradientSync> make_gradient_sync(std::string_view name, MPI_Comm communicator) {
  return find_backend(name).make(communicator);
}

void check_mpi(int code, std::string_view operation) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  throw CommError(fmt::format("{} failed: {}", operation, std::string(message, length)));
}

}  // namespace harness
