#include "harness/rank/run_facts.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/device_staging.h"
#include "backends/nccl_allreduce.h"
#include "backends/registry.h"
#include "harness/common/usable_cpus.h"

namespace harness {

std::string processor_name() {
  std::array<char, MPI_MAX_PROCESSOR_NAME> name{};
  int length = 0;
  MPI_Get_processor_name(name.data(), &length);
  return std::string(name.data(), static_cast<std::size_t>(std::max(0, length)));
}

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  // Open MPI counts the terminating NUL in `length`.
  std::string text(version, ::strnlen(version, static_cast<std::size_t>(length)));
  if (const auto newline = text.find('\n'); newline != std::string::npos) text.resize(newline);
  return text;
}

GpuFacts gather_gpu_facts(const Communicator& communicator, int cuda_device, const std::string& backend) {
  const CudaDeviceFacts mine = cuda_device_facts(cuda_device);
  const Json row = {{"index", mine.index},
                    {"name", mine.name},
                    {"pci_bus_id", mine.pci_bus_id},
                    {"memory_bytes", mine.memory_bytes},
                    {"mps", mps_control_running()}};
  GpuFacts gpus;
  gpus.driver_version = mine.driver_version;
  gpus.runtime_version = mine.runtime_version;
  if (backend == "nccl") gpus.nccl_version = nccl_version();
  for (const std::string& text : gather_to_root(communicator, row.dump())) {
    const Json rank = Json::parse(text);
    gpus.ranks.push_back({rank["index"].get<int>(), rank["name"].get<std::string>(),
                          rank["pci_bus_id"].get<std::string>(), rank["memory_bytes"].get<int64_t>(),
                          rank["mps"].get<bool>()});
  }
  return gpus;
}

std::optional<Oversubscription> gather_oversubscription(const Communicator& communicator, int threads_per_rank) {
  const UsableCpus usable = usable_cpus();
  const Json mine = {{"host", physical_host_name()},
                     {"cpus", usable.cpus},
                     {"quota_cpus", usable.quota ? usable.quota->cpus : 0.0},
                     {"cgroup", usable.cgroup}};
  std::vector<RankCpus> ranks;
  for (const std::string& text : gather_to_root(communicator, mine.dump())) {
    const Json rank = Json::parse(text);
    ranks.push_back({rank["host"].get<std::string>(), rank["cpus"].get<std::vector<int>>(),
                     rank["quota_cpus"].get<double>(), rank["cgroup"].get<std::string>()});
  }
  return communicator.rank() == 0 ? oversubscription(ranks, threads_per_rank) : std::nullopt;
}

}  // namespace harness
