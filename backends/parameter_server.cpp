#include "backends/parameter_server.h"

#include <algorithm>
#include <climits>

namespace harness {
namespace {

constexpr int kGradientTag = 201;
constexpr int kSumTag = 202;
// MPI counts are int: larger buffers travel in pieces of this many elements.
constexpr std::size_t kMaxMessage = INT_MAX;

}  // namespace

ParameterServer::ParameterServer(const Communicator& communicator) : communicator_(communicator) {}

void ParameterServer::allreduce_sum(std::span<float> buffer) {
  const int size = communicator_.size();
  if (size == 1 || buffer.empty()) return;  // every rank has the same size: all return
  for (std::size_t offset = 0; offset < buffer.size(); offset += kMaxMessage) {
    const std::size_t count_elements = std::min(kMaxMessage, buffer.size() - offset);
    const int count = static_cast<int>(count_elements);
    float* piece = buffer.data() + offset;
    if (communicator_.rank() == 0) {
      incoming_.resize(count_elements);
      for (int worker = 1; worker < size; ++worker) {
        check_mpi(MPI_Recv(incoming_.data(), count, MPI_FLOAT, worker, kGradientTag, communicator_.handle(),
                           MPI_STATUS_IGNORE),
                  "ps MPI_Recv(gradients)");
        for (std::size_t i = 0; i < count_elements; ++i) piece[i] += incoming_[i];
      }
      for (int worker = 1; worker < size; ++worker) {
        check_mpi(MPI_Send(piece, count, MPI_FLOAT, worker, kSumTag, communicator_.handle()),
                  "ps MPI_Send(sum)");
      }
    } else {
      check_mpi(MPI_Send(piece, count, MPI_FLOAT, 0, kGradientTag, communicator_.handle()),
                "ps MPI_Send(gradients)");
      check_mpi(MPI_Recv(piece, count, MPI_FLOAT, 0, kSumTag, communicator_.handle(), MPI_STATUS_IGNORE),
                "ps MPI_Recv(sum)");
    }
  }
}

}  // namespace harness
