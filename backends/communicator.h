// The MPI communicator of a backend, the trainer or a benchmark, with this rank's place in it read
// once; MPI errors as exceptions.
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>
#include <vector>

namespace harness {

// Throws CommError("<operation> failed: <MPI_Error_string>") when `code` is not MPI_SUCCESS.
void check_mpi(int code, std::string_view operation);

class Communicator {
 public:
  // Reads this process's rank and the size; the handle stays the caller's (it is not freed).
  // Implicit: wherever an MPI_Comm is at hand, so is its Communicator.
  Communicator(MPI_Comm handle);  // NOLINT(google-explicit-constructor)

  MPI_Comm handle() const { return handle_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  MPI_Comm handle_;
  int rank_ = 0;
  int size_ = 1;
};

// Every rank's host name (MPI_Get_processor_name), in rank order, on every rank.
std::vector<std::string> all_host_names(const Communicator& communicator);

// Every rank's `mine`, in rank order, on rank 0 (empty on the others). Collective.
std::vector<std::string> gather_to_root(const Communicator& communicator, const std::string& mine);

// How many ranks share this rank's node (MPI_COMM_TYPE_SHARED), and this rank's index among them.
struct NodePlace {
  int local_rank = 0;
  int local_size = 1;
};
NodePlace node_place(const Communicator& communicator);

}  // namespace harness
