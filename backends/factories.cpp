#include "backends/factories.h"

#include <fmt/format.h>

#include "backends/cuda_ipc_allreduce.h"
#include "backends/gloo_allreduce.h"
#include "backends/hierarchical_allreduce.h"
#include "backends/injected_delay.h"
#include "backends/mpi_allreduce.h"
#include "backends/nccl_allreduce.h"
#include "backends/parameter_server.h"
#include "backends/registry.h"
#include "backends/ring_allreduce.h"
#include "backends/shared_memory_allreduce.h"
#include "harness/common/errors.h"

namespace harness {
namespace {

template <typename Backend>
std::unique_ptr<GradientSync> make(const Communicator& communicator, const BackendOptions& /*options*/) {
  return std::make_unique<Backend>(communicator);
}

std::unique_ptr<GradientSync> make_ring(const Communicator& communicator, const BackendOptions& options) {
  return std::make_unique<RingAllreduce>(communicator, ring_mpi_below_chunk_bytes(options));
}

std::unique_ptr<GradientSync> make_shared_memory(const Communicator& communicator, const BackendOptions& options) {
  // Its sums scattered only for staging from a GPU, which reads them where they are; staging
  // picks both levers by size where they are "auto" (staging_levers.h).
  return std::make_unique<SharedMemoryAllreduce>(communicator, shm_reduce_threads(options),
                                                 shm_copy_engine_gathers(options), staging_lever_settings(options));
}

std::unique_ptr<GradientSync> make_hierarchical(const Communicator& communicator, const BackendOptions& options) {
  return std::make_unique<HierarchicalAllreduce>(communicator, hier_mpi_below_bytes(options),
                                                 shm_reduce_threads(options), staging_lever_settings(options));
}

std::unique_ptr<GradientSync> make_gloo(const Communicator& communicator, const BackendOptions& /*options*/) {
  return make_gloo_allreduce(communicator);
}

std::unique_ptr<GradientSync> make_cuda_ipc(const Communicator& communicator, const BackendOptions& options) {
  return make_cuda_ipc_allreduce(communicator, options, cuda_ipc_one_shot_below_bytes(options),
                                 cuda_ipc_device_arrivals(options));
}

const BackendFactory& factory_of(std::string_view name) {
  for (const BackendFactory& factory : backend_factories()) {
    if (factory.name == name) return factory;
  }
  throw Error(fmt::format("backend \"{}\" is in the backend table but has no constructor (backends/factories.cpp)",
                          name));
}

// Every backend on a one-rank communicator: the sum over one rank is the buffer itself.
class NothingToExchange final : public GradientSync {
 public:
  explicit NothingToExchange(std::string_view backend) : backend_(backend) {}
  std::string_view name() const override { return backend_; }
  void allreduce_sum(std::span<float> /*buffer*/) override {}
  bool exchanges() const override { return false; }

 private:
  std::string_view backend_;  // a name from the table, which lives as long as the program
};

}  // namespace

const std::vector<BackendFactory>& backend_factories() {
  static const std::vector<BackendFactory> factories = {
      {"allreduce", make<MpiAllreduce>},
      {"ring", make_ring},
      {"ps", make<ParameterServer>},
      {"shm", make_shared_memory},
      {"hier", make_hierarchical},
      {"gloo", make_gloo},
      {"nccl", make_nccl_allreduce},
      {"cuda_ipc", make_cuda_ipc},
  };
  return factories;
}

std::unique_ptr<GradientSync> make_gradient_sync(std::string_view name,
                                                 const Communicator& communicator) {
  return make_gradient_sync(name, BackendOptions{}, communicator);
}

std::unique_ptr<GradientSync> make_gradient_sync(std::string_view name, const BackendOptions& options,
                                                 const Communicator& communicator) {
  const BackendInfo& info = find_backend(name);
  // A backend this build lacks, or one for GPU memory only given host memory, is refused on one
  // rank as on several, before the shortcut below (the settings' other problems are validation's,
  // before launch).
  if (info.unavailable_reason != nullptr) {
    if (std::string reason = info.unavailable_reason(); !reason.empty()) throw NotSupported(reason);
  }
  if (info.device_memory_only && options.device != "cuda" && info.problem != nullptr) {
    throw NotSupported(info.problem(options));
  }
  if (communicator.size() == 1) return std::make_unique<NothingToExchange>(info.name);
  auto backend = factory_of(info.name).make(communicator, options);
  if (options.inject_comm_delay_us > 0) {
    return std::make_unique<InjectedDelay>(std::move(backend), options.inject_comm_delay_us);
  }
  return backend;
}

}  // namespace harness
