#include "backends/communicator.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {

void check_mpi(int code, std::string_view operation) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  throw CommError(fmt::format("{} failed: {}", operation, std::string(message, length)));
}

Communicator::Communicator(MPI_Comm handle) : handle_(handle) {
  check_mpi(MPI_Comm_rank(handle_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(handle_, &size_), "MPI_Comm_size");
}

std::vector<std::string> all_host_names(const Communicator& communicator) {
  std::array<char, MPI_MAX_PROCESSOR_NAME> host{};
  int length = 0;
  check_mpi(MPI_Get_processor_name(host.data(), &length), "MPI_Get_processor_name");
  std::vector<char> all(static_cast<std::size_t>(communicator.size()) * host.size());
  check_mpi(MPI_Allgather(host.data(), static_cast<int>(host.size()), MPI_CHAR, all.data(),
                          static_cast<int>(host.size()), MPI_CHAR, communicator.handle()),
            "MPI_Allgather(host names)");
  std::vector<std::string> hosts;
  for (int r = 0; r < communicator.size(); ++r) {
    hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * host.size());
  }
  return hosts;
}

std::vector<std::string> gather_to_root(const Communicator& communicator, const std::string& mine) {
  const bool root = communicator.rank() == 0;
  const int ranks = communicator.size();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(root ? static_cast<std::size_t>(ranks) : 0);
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, communicator.handle()),
            "MPI_Gather(lengths)");
  std::vector<int> offsets(lengths.size());
  std::string all;
  if (root) {
    int64_t total = 0;
    for (int r = 0; r < ranks; ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  check_mpi(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                        communicator.handle()),
            "MPI_Gatherv");
  std::vector<std::string> gathered;
  for (std::size_t r = 0; r < lengths.size(); ++r) gathered.push_back(all.substr(offsets[r], lengths[r]));
  return gathered;
}

NodePlace node_place(const Communicator& communicator) {
  const std::vector<std::string> hosts = all_host_names(communicator);
  const std::string& mine = hosts[static_cast<std::size_t>(communicator.rank())];
  NodePlace place;
  place.local_rank = static_cast<int>(std::count(hosts.begin(), hosts.begin() + communicator.rank(), mine));
  place.local_size = static_cast<int>(std::count(hosts.begin(), hosts.end(), mine));
  return place;
}

OwnedComm::~OwnedComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (handle_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&handle_);
}

OwnedComm split_by_node(const Communicator& communicator) {
  const std::vector<std::string> hosts = all_host_names(communicator);
  const auto mine = hosts.begin() + communicator.rank();
  // The node's colour: the lowest rank with this host name.
  const auto color = static_cast<int>(std::find(hosts.begin(), hosts.end(), *mine) - hosts.begin());
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(communicator.handle(), color, communicator.rank(), &node), "MPI_Comm_split(by host)");
  return OwnedComm(node);
}

}  // namespace harness
