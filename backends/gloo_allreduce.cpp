#include "backends/gloo_allreduce.h"

#include "harness/common/errors.h"

#ifdef HARNESS_WITH_GLOO

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>

namespace harness {
namespace {

// This host's IPv4 address on interface `name` ("lo", "eth0"), or "" when it has none.
std::string interface_address(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string address;
  for (const ifaddrs* entry = list; entry != nullptr && address.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET || name != entry->ifa_name) continue;
    std::array<char, INET_ADDRSTRLEN> text{};
    const auto* ipv4 = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (inet_ntop(AF_INET, &ipv4->sin_addr, text.data(), text.size()) != nullptr) address = text.data();
  }
  freeifaddrs(list);
  return address;
}

bool resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const bool ok = getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0;
  if (found != nullptr) freeaddrinfo(found);
  return ok;
}

// Whether `ok` holds on every rank of `communicator` (collective).
bool on_every_rank(bool ok, const Communicator& communicator) {
  int all = ok ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, communicator.handle()), "MPI_Allreduce(gloo check)");
  return all == 1;
}

class GlooAllreduce final : public GradientSync {
 public:
  explicit GlooAllreduce(const Communicator& communicator) {
    const Addresses addresses = rendezvous_addresses(communicator);

    // Gloo's full-mesh connect occasionally loses a connection on a busy machine ("Connection
    // closed by peer"), so the ranks agree over MPI whether everyone got through, and if not all
    // of them start over with a fresh store.
    constexpr int kAttempts = 3;
    for (int attempt = 1;; ++attempt) {
      std::string failure = connect(communicator, addresses);
      int everyone_ok = failure.empty() ? 1 : 0;
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &everyone_ok, 1, MPI_INT, MPI_MIN, communicator.handle()),
                "MPI_Allreduce(gloo rendezvous)");
      if (everyone_ok == 1) return;
      group_.reset();
      store_.reset();
      if (attempt == kAttempts) {
        throw CommError(fmt::format("gloo rendezvous through {} failed {} times; last error on "
                                    "this rank: {}",
                                    addresses.store, kAttempts,
                                    failure.empty() ? "none (another rank failed)" : failure));
      }
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
  // and the only one whose traffic must stay on the machine). Across hosts, as PyTorch's Gloo
  // does: GLOO_SOCKET_IFNAME names the interface the hosts share, and each rank uses its address
  // there (the store at rank 0's); without it, the host names, which every rank must resolve, or
  // the rendezvous would wait for an address that never answers. Collective; every rank throws
  // the same CommError when the addresses cannot be had.
  static Addresses rendezvous_addresses(const Communicator& communicator) {
    const std::vector<std::string> hosts = all_host_names(communicator);
    if (std::all_of(hosts.begin(), hosts.end(), [&hosts](const auto& host) { return host == hosts[0]; })) {
      return {"127.0.0.1", "127.0.0.1"};
    }
    const std::string& own_host = hosts[static_cast<std::size_t>(communicator.rank())];
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface != nullptr && *interface != '\0') {
      const std::string own = interface_address(interface);
      if (!on_every_rank(!own.empty(), communicator)) {
        throw CommError(fmt::format("gloo: GLOO_SOCKET_IFNAME={}: a rank has no IPv4 address on that interface{}",
                                    interface, own.empty() ? " (this one, on " + own_host + ")" : ""));
      }
      std::array<char, INET_ADDRSTRLEN> store{};
      std::copy_n(own.c_str(), std::min(own.size(), store.size() - 1), store.begin());
      check_mpi(MPI_Bcast(store.data(), static_cast<int>(store.size()), MPI_CHAR, 0, communicator.handle()),
                "MPI_Bcast(gloo store address)");
      return {store.data(), own};
    }
    if (!on_every_rank(resolves(hosts[0]) && resolves(own_host), communicator)) {
      throw CommError(fmt::format("gloo: the ranks span several hosts and not every rank resolves rank 0's host "
                                  "name \"{}\" and its own; set GLOO_SOCKET_IFNAME to the network interface the "
                                  "hosts share (as for PyTorch)",
                                  hosts[0]));
    }
    return {hosts[0], own_host};
  }

  // One rendezvous attempt: rank 0 serves a TCPStore on an ephemeral port and sends the port to
  // every rank over MPI; then every rank builds its process group. Returns "" or what failed.
  std::string connect(const Communicator& communicator, const Addresses& addresses) {
    const int rank = communicator.rank();
    const int size = communicator.size();
    c10d::TCPStoreOptions store_options;
    store_options.isServer = rank == 0;
    store_options.port = 0;
    store_options.numWorkers = size;
    store_options.waitWorkers = false;
    std::string failure;
    int port = 0;
    if (rank == 0) {
      try {
        store_ = c10::make_intrusive<c10d::TCPStore>(addresses.store, store_options);
        port = static_cast<c10d::TCPStore&>(*store_).getPort();
      } catch (const std::exception& error) {
        failure = error.what();
        port = -1;
      }
    }
    check_mpi(MPI_Bcast(&port, 1, MPI_INT, 0, communicator.handle()), "MPI_Bcast(gloo store port)");
    if (port < 0) return failure.empty() ? "rank 0 could not start the store" : failure;
    try {
      if (rank != 0) {
        store_options.isServer = false;
        store_options.port = static_cast<std::uint16_t>(port);
        store_ = c10::make_intrusive<c10d::TCPStore>(addresses.store, store_options);
      }
      // A bounded timeout: a peer that failed must not keep this rank waiting for 30 minutes.
      auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
      options->devices = {c10d::ProcessGroupGloo::createDeviceForHostname(addresses.own)};
      options->threads = 1;
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank, size, options);
    } catch (const std::exception& error) {
      failure = fmt::format("{}:{}: {}", addresses.store, port, error.what());
    }
    return failure;
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

std::unique_ptr<GradientSync> make_gloo_allreduce(const Communicator& communicator) {
  return std::make_unique<GlooAllreduce>(communicator);
}

}  // namespace harness

#else  // !HARNESS_WITH_GLOO

namespace harness {

std::unique_ptr<GradientSync> make_gloo_allreduce(const Communicator& /*communicator*/) {
  throw NotSupported(
      "backend \"gloo\" is not in this build: install libgloo-dev (bash .ci/install-deps) and "
      "configure again");
}

}  // namespace harness

#endif
