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

// A communicator this code created (MPI_Comm_split): freed when its owner goes, also when the
// owner's constructor throws after it was made (a member destructor runs; the owner's does not).
class OwnedComm {
 public:
  explicit OwnedComm(MPI_Comm handle = MPI_COMM_NULL) : handle_(handle) {}
  ~OwnedComm();
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;

  MPI_Comm get() const { return handle_; }
  // Where MPI_Comm_split writes the new handle; the one held before must be null.
  MPI_Comm* target() { return &handle_; }

 private:
  MPI_Comm handle_;
};

// Every rank's host name (MPI_Get_processor_name), in rank order, on every rank.
std::vector<std::string> all_host_names(const Communicator& communicator);

// Every rank's `mine`, in rank order, on rank 0 (empty on the others). Collective.
std::vector<std::string> gather_to_root(const Communicator& communicator, const std::string& mine);

// Nodes are told apart by host name (MPI_Get_processor_name), not by MPI_COMM_TYPE_SHARED: every
// rank works the grouping out from the same gathered names, so all agree by construction, and
// simulated hosts (UTS namespaces of one machine) are the nodes the launcher placed ranks on. With
// Open MPI 4.1.6 and an external PMIx (Ubuntu 24.04), `hier` hung on 2 simulated hosts x 8 ranks
// where MPI_Comm_split_type was its first collective; Open MPI 4.1 with PMIx 4.2.3 and later is
// known to give wrong shared-memory groups (open-mpi/ompi#10416, #11585).

// How many ranks share this rank's node, and this rank's index among them (collective).
struct NodePlace {
  int local_rank = 0;
  int local_size = 1;
};
NodePlace node_place(const Communicator& communicator);

// The ranks of this rank's node, in the order of their ranks in `communicator`: a new
// communicator (collective).
OwnedComm split_by_node(const Communicator& communicator);

}  // namespace harness
