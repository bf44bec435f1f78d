#include "backends/communicator.h"

#include <array>

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

NodePlace node_place(const Communicator& communicator) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(communicator.handle(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  NodePlace place;
  const int ranked = MPI_Comm_rank(node, &place.local_rank);
  const int sized = MPI_Comm_size(node, &place.local_size);
  MPI_Comm_free(&node);
  check_mpi(ranked, "MPI_Comm_rank");
  check_mpi(sized, "MPI_Comm_size");
  return place;
}

}  // namespace harness
