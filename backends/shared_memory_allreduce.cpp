#include "backends/shared_memory_allreduce.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "harness/errors.h"

namespace harness {

// A POSIX shared-memory object mapped by every rank of a communicator. Rank 0 creates and sizes
// it; once all ranks have mapped it the name is removed, so nothing is left in /dev/shm however
// the job ends. Unmapped when the last owner lets go (which may be after the backend is gone).
class SharedMapping {
 public:
  // Collective. Throws CommError on every rank when any rank cannot map it.
  SharedMapping(MPI_Comm communicator, std::size_t bytes) : bytes_(bytes) {
    int rank = 0;
    check_mpi(MPI_Comm_rank(communicator, &rank), "MPI_Comm_rank");
    // Rank 0's verdict, then the name or the error: one broadcast of a fixed-size message.
    std::array<char, 512> message{};
    if (rank == 0) {
      static int created = 0;
      const std::string name = fmt::format("/harness-shm-{}-{}", ::getpid(), created++);
      const std::string error = create(name);
      const std::string& text = error.empty() ? name : error;
      std::copy_n(text.c_str(), std::min(text.size(), message.size() - 1), message.data());
    }
    check_mpi(
        MPI_Bcast(message.data(), static_cast<int>(message.size()), MPI_CHAR, 0, communicator),
        "MPI_Bcast");
    const std::string text(message.data());
    std::string error = text.starts_with('/') ? std::string() : text;
    if (error.empty() && rank != 0) error = open_existing(text);
    int mapped = error.empty() ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, communicator),
              "MPI_Allreduce");
    if (rank == 0 && text.starts_with('/')) ::shm_unlink(text.c_str());
    if (mapped == 0) {
      if (data_ != nullptr) ::munmap(data_, bytes_);
      data_ = nullptr;
      throw CommError(error.empty()
                          ? std::string("backend \"shm\": another rank could not map the "
                                        "shared memory")
                          : "backend \"shm\": " + error);
    }
  }
  ~SharedMapping() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;

  std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  std::string create(const std::string& name) {
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return fmt::format("shm_open({}) failed: {}", name, std::strerror(errno));
    // posix_fallocate reserves the pages now: a /dev/shm too small for them is an error here,
    // where a bare ftruncate would let the first store past the limit raise SIGBUS.
    const int reserved = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes_));
    std::string error;
    if (reserved != 0) {
      error = fmt::format("cannot reserve {:.1f} MiB of shared memory in /dev/shm: {}",
                          static_cast<double>(bytes_) / (1024.0 * 1024.0), std::strerror(reserved));
    } else {
      error = map(fd, name);
    }
    ::close(fd);
    if (!error.empty()) ::shm_unlink(name.c_str());
    return error;
  }

  std::string open_existing(const std::string& name) {
    const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) return fmt::format("shm_open({}) failed: {}", name, std::strerror(errno));
    std::string error = map(fd, name);
    ::close(fd);
    return error;
  }

  std::string map(int fd, const std::string& name) {
    void* data = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) return fmt::format("mmap({}) failed: {}", name, std::strerror(errno));
    data_ = data;
    return {};
  }

  std::size_t bytes_;
  void* data_ = nullptr;
};

namespace {

constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kFlagBytes = 64;              // one cache line per rank's flag
constexpr std::size_t kScratchFloats = 256 * 1024;  // 1 MiB per rank
constexpr int kSpinsBeforeYielding = 4096;

std::size_t round_up(std::size_t bytes, std::size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

// The flags are shared between processes: only a lock-free atomic is the same object in both.
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

SharedMemoryAllreduce::SharedMemoryAllreduce(MPI_Comm communicator)
    : communicator_(communicator) {
  check_mpi(MPI_Comm_rank(communicator_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(communicator_, &size_), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(communicator_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int smallest_node = node_size;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &smallest_node, 1, MPI_INT, MPI_MIN, communicator_),
            "MPI_Allreduce");
  if (smallest_node != size_) {
    throw NotSupported(fmt::format(
        "backend \"shm\" needs every rank on one node (it reduces through shared memory), but "
        "some node holds only {} of the {} ranks; use allreduce, ring, ps or gloo across nodes",
        smallest_node, size_));
  }

  const std::size_t flags_bytes =
      round_up(kFlagBytes * static_cast<std::size_t>(size_), kPageBytes);
  const std::size_t scratch_bytes = kScratchFloats * sizeof(float);
  control_ = std::make_shared<SharedMapping>(
      communicator_, flags_bytes + scratch_bytes * static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    scratch_.push_back(reinterpret_cast<float*>(control_->data() + flags_bytes +
                                                scratch_bytes * static_cast<std::size_t>(r)));
  }
  // Every rank's flag starts at zero (new shared memory is zero-filled), so arrivals count from 0.
}

SharedMemoryAllreduce::~SharedMemoryAllreduce() = default;

std::shared_ptr<float> SharedMemoryAllreduce::allocate_buffer(std::size_t count) {
  // Segments on page boundaries: no two ranks' gradients share a cache line.
  const std::size_t segment_bytes =
      round_up(std::max<std::size_t>(count, 1) * sizeof(float), kPageBytes);
  auto mapping = std::make_shared<SharedMapping>(communicator_,
                                                 segment_bytes * static_cast<std::size_t>(size_));
  Region region;
  region.mapping = mapping;
  region.count = count;
  for (int r = 0; r < size_; ++r) {
    region.segments.push_back(
        reinterpret_cast<float*>(mapping->data() + segment_bytes * static_cast<std::size_t>(r)));
  }
  float* mine = region.segments[static_cast<std::size_t>(rank_)];
  std::erase_if(regions_, [](const Region& old) { return old.mapping.expired(); });
  regions_.push_back(std::move(region));
  return std::shared_ptr<float>(std::move(mapping), mine);  // shares the mapping's ownership
}

void SharedMemoryAllreduce::arrive_and_wait() {
  const uint64_t target = ++arrivals_;
  std::byte* flags = control_->data();
  auto flag = [flags](int r) {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(flags + kFlagBytes * static_cast<std::size_t>(r)));
  };
  // Release: this rank's stores to any segment are visible to whoever sees the flag.
  flag(rank_).store(target, std::memory_order_release);
  for (int r = 0; r < size_; ++r) {
    int spins = 0;
    while (flag(r).load(std::memory_order_acquire) < target) {
      if (++spins < kSpinsBeforeYielding) {
        cpu_relax();
      } else {
        ::sched_yield();  // oversubscribed: let the rank we wait for have the core
      }
    }
  }
}

void SharedMemoryAllreduce::reduce_in_place(const std::vector<float*>& segments,
                                            std::size_t offset, std::size_t count) {
  const auto ranks = static_cast<std::size_t>(size_);
  const auto rank = static_cast<std::size_t>(rank_);
  const std::size_t begin = offset + count * rank / ranks;
  const std::size_t end = offset + count * (rank + 1) / ranks;
  // Block by block through a sum that stays in L1; ranks added in rank order, so the sums are
  // the same whichever rank computes them.
  constexpr std::size_t kBlock = 1024;
  std::array<float, kBlock> sum;
  for (std::size_t block = begin; block < end; block += kBlock) {
    const std::size_t n = std::min(kBlock, end - block);
    std::copy_n(segments[0] + block, n, sum.data());
    for (std::size_t r = 1; r < ranks; ++r) {
      const float* in = segments[r] + block;
      for (std::size_t i = 0; i < n; ++i) sum[i] += in[i];
    }
    for (std::size_t r = 0; r < ranks; ++r) std::copy_n(sum.data(), n, segments[r] + block);
  }
}

void SharedMemoryAllreduce::allreduce_sum(std::span<float> buffer) {
  if (size_ == 1 || buffer.empty()) return;
  for (const Region& region : regions_) {
    if (region.mapping.expired()) continue;
    const auto mine =
        reinterpret_cast<std::uintptr_t>(region.segments[static_cast<std::size_t>(rank_)]);
    const auto first = reinterpret_cast<std::uintptr_t>(buffer.data());
    if (first >= mine && first + buffer.size_bytes() <= mine + region.count * sizeof(float)) {
      arrive_and_wait();  // every rank's gradients are in its segment
      reduce_in_place(region.segments, (first - mine) / sizeof(float), buffer.size());
      arrive_and_wait();  // every slice is summed: the segment may be read and reused
      return;
    }
  }
  // Memory of the caller's: through the scratch segments, a chunk at a time. Between the second
  // arrival of one chunk and the first of the next, nobody touches another rank's scratch.
  float* mine = scratch_[static_cast<std::size_t>(rank_)];
  for (std::size_t done = 0; done < buffer.size(); done += kScratchFloats) {
    const std::size_t n = std::min(kScratchFloats, buffer.size() - done);
    std::copy_n(buffer.data() + done, n, mine);
    arrive_and_wait();
    reduce_in_place(scratch_, 0, n);
    arrive_and_wait();
    std::copy_n(mine, n, buffer.data() + done);
  }
}

}  // namespace harness
