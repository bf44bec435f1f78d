#include "backends/ring_allreduce.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

constexpr int kReduceScatterTag = 101;
constexpr int kAllgatherTag = 102;

struct Chunk {
  std::size_t offset;
  std::size_t count;
};

// Chunk c of p over n elements: the first n mod p chunks hold one element more.
Chunk chunk_of(std::size_t n, int p, int c) {
  const std::size_t base = n / p;
  const std::size_t extra = n % p;
  const auto index = static_cast<std::size_t>(c);
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

int wrap(int value, int size) { return ((value % size) + size) % size; }

}  // namespace

RingAllreduce::RingAllreduce(const Communicator& communicator) : communicator_(communicator) {}

void RingAllreduce::allreduce_sum(std::span<float> buffer) {
  const int rank = communicator_.rank();
  const int size = communicator_.size();
  if (size == 1 || buffer.empty()) return;
  const std::size_t n = buffer.size();
  if (n / size + 1 > static_cast<std::size_t>(INT_MAX)) {
    throw NotSupported(fmt::format("ring: chunks above {} elements", INT_MAX));
  }
  const int right = wrap(rank + 1, size);
  const int left = wrap(rank - 1, size);
  incoming_.resize(n / size + 1);

  // Reduce-scatter: in step k, send chunk (rank - k) and add the received chunk (rank - k - 1).
  for (int step = 0; step < size - 1; ++step) {
    const Chunk send = chunk_of(n, size, wrap(rank - step, size));
    const Chunk receive = chunk_of(n, size, wrap(rank - step - 1, size));
    check_mpi(MPI_Sendrecv(buffer.data() + send.offset, static_cast<int>(send.count), MPI_FLOAT,
                           right, kReduceScatterTag, incoming_.data(),
                           static_cast<int>(receive.count), MPI_FLOAT, left, kReduceScatterTag,
                           communicator_.handle(), MPI_STATUS_IGNORE),
              "ring reduce-scatter MPI_Sendrecv");
    float* target = buffer.data() + receive.offset;
    for (std::size_t i = 0; i < receive.count; ++i) target[i] += incoming_[i];
  }
  // Rank r now holds the full sum of chunk (r + 1). Allgather: in step k, pass on chunk
  // (rank + 1 - k) and receive the finished chunk (rank - k) straight into place.
  for (int step = 0; step < size - 1; ++step) {
    const Chunk send = chunk_of(n, size, wrap(rank + 1 - step, size));
    const Chunk receive = chunk_of(n, size, wrap(rank - step, size));
    check_mpi(MPI_Sendrecv(buffer.data() + send.offset, static_cast<int>(send.count), MPI_FLOAT,
                           right, kAllgatherTag, buffer.data() + receive.offset,
                           static_cast<int>(receive.count), MPI_FLOAT, left, kAllgatherTag,
                           communicator_.handle(), MPI_STATUS_IGNORE),
              "ring allgather MPI_Sendrecv");
  }
}

}  // namespace harness
