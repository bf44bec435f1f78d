#include "backends/ring_allreduce.h"

#include <algorithm>

#include "backends/mpi_allreduce.h"

namespace harness {
namespace {

constexpr int kReduceScatterTag = 101;
constexpr int kAllgatherTag = 102;
constexpr std::size_t kPieceFloats = kRingPieceBytes / sizeof(float);

struct Range {
  std::size_t offset;
  std::size_t count;
};

// Chunk c of p over n elements: the first n mod p chunks hold one element more.
Range chunk_of(std::size_t n, int p, int c) {
  const std::size_t base = n / p;
  const std::size_t extra = n % p;
  const auto index = static_cast<std::size_t>(c);
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

std::size_t piece_count(std::size_t count) { return (count + kPieceFloats - 1) / kPieceFloats; }

// Piece j of a range, as both ends of a message cut it.
Range piece_of(Range range, std::size_t j) {
  const std::size_t offset = j * kPieceFloats;
  return {range.offset + offset, std::min(kPieceFloats, range.count - offset)};
}

int wrap(int value, int size) { return ((value % size) + size) % size; }

void add_into(float* __restrict target, const float* __restrict addend, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) target[i] += addend[i];
}

// One rank's part of the ring: 2(p-1) steps, each receiving one chunk from the left (added in
// the reduce-scatter steps, stored in the allgather steps) while sending one to the right.
class RingRun {
 public:
  RingRun(std::span<float> buffer, const Communicator& communicator, std::vector<float>& scratch)
      : buffer_(buffer),
        comm_(communicator.handle()),
        rank_(communicator.rank()),
        size_(communicator.size()),
        right_(wrap(rank_ + 1, size_)),
        left_(wrap(rank_ - 1, size_)),
        sends_(static_cast<std::size_t>(2 * (size_ - 1))) {
    // Two reduce-scatter steps' receipts at a time (one when there is one step): the next step's
    // pieces are received while this step's are added.
    const std::size_t largest = buffer.size() / size_ + 1;
    scratch.resize(static_cast<std::size_t>(std::min(2, size_ - 1)) * largest);
    incoming_[0] = scratch.data();
    incoming_[1] = size_ > 2 ? scratch.data() + largest : nullptr;
  }

  void run() {
    const int steps = 2 * (size_ - 1);
    post_sends(0, chunk(rank_));  // this rank's own chunk needs no receipt first
    post_receives(0);
    for (int step = 0; step < steps; ++step) {
      if (step + 1 < size_ - 1) post_receives(step + 1);  // the next reduce-scatter step's
      if (step >= size_ - 1) post_receives(step);         // allgather: into place, once free
      const Range received = chunk_of_step(step);
      std::vector<MPI_Request>& receipts = receipts_[step % 2];
      for (std::size_t j = 0; j < receipts.size(); ++j) {
        check_mpi(MPI_Wait(&receipts[j], MPI_STATUS_IGNORE), "ring MPI_Wait(receive)");
        const Range piece = piece_of(received, j);
        if (step < size_ - 1) {
          add_into(buffer_.data() + piece.offset,
                   incoming_[step % 2] + (piece.offset - received.offset), piece.count);
        }
        // What this step finished is what the next step sends: pass the piece on now.
        if (step + 1 < steps) post_send(step + 1, piece);
      }
    }
    for (auto& step_sends : sends_) wait_all(step_sends, "ring MPI_Waitall(send)");
  }

 private:
  Range chunk(int c) const { return chunk_of(buffer_.size(), size_, c); }

  // The chunk received in `step`: reduce-scatter step k adds chunk rank-k-1; allgather step k
  // receives the finished chunk rank-k.
  Range chunk_of_step(int step) const {
    return step < size_ - 1 ? chunk(wrap(rank_ - step - 1, size_))
                            : chunk(wrap(rank_ - (step - (size_ - 1)), size_));
  }

  int tag(int step) const { return step < size_ - 1 ? kReduceScatterTag : kAllgatherTag; }

  void post_sends(int step, Range range) {
    for (std::size_t j = 0; j < piece_count(range.count); ++j) post_send(step, piece_of(range, j));
  }

  void post_send(int step, Range piece) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(buffer_.data() + piece.offset, static_cast<int>(piece.count), MPI_FLOAT,
                        right_, tag(step), comm_, &request),
              "ring MPI_Isend");
    sends_[static_cast<std::size_t>(step)].push_back(request);
  }

  void post_receives(int step) {
    const Range range = chunk_of_step(step);
    float* target = buffer_.data() + range.offset;
    if (step < size_ - 1) {
      target = incoming_[step % 2];
    } else {
      // In place: the reduce-scatter step that sent this chunk must be done reading it.
      wait_all(sends_[static_cast<std::size_t>(step - (size_ - 1))], "ring MPI_Waitall(send)");
    }
    std::vector<MPI_Request>& receipts = receipts_[step % 2];
    receipts.assign(piece_count(range.count), MPI_REQUEST_NULL);
    for (std::size_t j = 0; j < receipts.size(); ++j) {
      const Range piece = piece_of(range, j);
      check_mpi(MPI_Irecv(target + (piece.offset - range.offset), static_cast<int>(piece.count),
                          MPI_FLOAT, left_, tag(step), comm_, &receipts[j]),
                "ring MPI_Irecv");
    }
  }

  static void wait_all(std::vector<MPI_Request>& requests, const char* operation) {
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
              operation);
    requests.clear();
  }

  std::span<float> buffer_;
  MPI_Comm comm_;
  int rank_;
  int size_;
  int right_;
  int left_;
  float* incoming_[2] = {nullptr, nullptr};
  std::vector<MPI_Request> receipts_[2];       // by step parity
  std::vector<std::vector<MPI_Request>> sends_;  // by step
};

}  // namespace

void ring_allreduce_sum(std::span<float> buffer, const Communicator& communicator,
                        std::vector<float>& scratch) {
  // No limit from MPI's int counts: every message is one piece of at most kPieceFloats.
  if (communicator.size() == 1 || buffer.empty()) return;
  RingRun(buffer, communicator, scratch).run();
}

bool ring_hands_to_mpi(std::size_t bytes, int ranks, std::size_t mpi_below_chunk_bytes) {
  // bytes / ranks < chunk, without the overflow of chunk * ranks for a huge setting.
  return ranks > 1 && bytes / static_cast<std::size_t>(ranks) < mpi_below_chunk_bytes;
}

void RingAllreduce::allreduce_sum(std::span<float> buffer) {
  if (ring_hands_to_mpi(buffer.size_bytes(), communicator_.size(), mpi_below_chunk_bytes_)) {
    allreduce_sum_in_pieces(buffer, communicator_, "ring MPI_Allreduce");
    return;
  }
  ring_allreduce_sum(buffer, communicator_, scratch_);
}

}  // namespace harness
