#include "backends/gloo_allreduce.h"

#include "harness/errors.h"

#ifdef HARNESS_WITH_GLOO

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace harness {
namespace {

class GlooAllreduce final : public GradientSync {
 public:
  explicit GlooAllreduce(MPI_Comm communicator) {
    int rank = 0;
    int size = 1;
    check_mpi(MPI_Comm_rank(communicator, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(communicator, &size), "MPI_Comm_size");
    const Addresses addresses = rendezvous_addresses(communicator, rank, size);
    const std::string& address = addresses.store;

    // Rank 0 serves the store; the port it got goes to every rank over MPI.
    c10d::TCPStoreOptions store_options;
    store_options.isServer = rank == 0;
    store_options.port = 0;
    store_options.numWorkers = size;
    store_options.waitWorkers = false;
    c10::intrusive_ptr<c10d::TCPStore> server;
    int port = 0;
    try {
      if (rank == 0) {
        server = c10::make_intrusive<c10d::TCPStore>(address, store_options);
        port = server->getPort();
      }
      check_mpi(MPI_Bcast(&port, 1, MPI_INT, 0, communicator), "MPI_Bcast(gloo store port)");
      store_options.port = static_cast<std::uint16_t>(port);
      store_ = rank == 0 ? server : c10::make_intrusive<c10d::TCPStore>(address, store_options);

      auto options = c10d::ProcessGroupGloo::Options::create();
      options->devices = {c10d::ProcessGroupGloo::createDeviceForHostname(addresses.own)};
      options->threads = 1;
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank, size, options);
    } catch (const std::exception& error) {
      throw CommError(fmt::format("gloo rendezvous through {}:{} failed: {}", address, port,
                                  error.what()));
    }
  }

  std::string_view name() const override { return "gloo"; }

  void allreduce_sum(std::span<float> buffer) override {
    if (buffer.empty()) return;
    // A view of the caller's memory: Gloo reduces in place, no copy.
    std::vector<at::Tensor> tensors = {
        at::from_blob(buffer.data(), {static_cast<int64_t>(buffer.size())}, at::kFloat)};
    try {
      group_->allreduce(tensors)->wait();
    } catch (const std::exception& error) {
      throw CommError(fmt::format("gloo allreduce failed: {}", error.what()));
    }
  }

 private:
  struct Addresses {
    std::string store;  // where rank 0's TCPStore listens
    std::string own;    // what this rank's Gloo transport binds to
  };

  // The loopback address for both when all ranks share a host (the common case on one machine,
  // and the only one whose traffic must stay on the machine); otherwise rank 0's host name for
  // the store and each rank's own host name for its transport.
  static Addresses rendezvous_addresses(MPI_Comm communicator, int rank, int size) {
    std::array<char, MPI_MAX_PROCESSOR_NAME> host{};
    int length = 0;
    MPI_Get_processor_name(host.data(), &length);
    std::vector<char> all(static_cast<std::size_t>(size) * host.size());
    check_mpi(MPI_Allgather(host.data(), static_cast<int>(host.size()), MPI_CHAR, all.data(),
                            static_cast<int>(host.size()), MPI_CHAR, communicator),
              "MPI_Allgather(host names)");
    bool one_host = true;
    for (int r = 1; r < size; ++r) {
      one_host = one_host && std::strcmp(all.data(), all.data() + r * host.size()) == 0;
    }
    if (one_host) return {"127.0.0.1", "127.0.0.1"};
    return {std::string(all.data()), std::string(all.data() + rank * host.size())};
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

bool gloo_available() { return true; }

std::unique_ptr<GradientSync> make_gloo_allreduce(MPI_Comm communicator) {
  return std::make_unique<GlooAllreduce>(communicator);
}

}  // namespace harness

#else  // !HARNESS_WITH_GLOO

namespace harness {

bool gloo_available() { return false; }

std::unique_ptr<GradientSync> make_gloo_allreduce(MPI_Comm /*communicator*/) {
  throw NotSupported(
      "backend \"gloo\" is not in this build: install libgloo-dev (bash .ci/install-deps) and "
      "configure again");
}

}  // namespace harness

#endif
