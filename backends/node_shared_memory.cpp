#include "backends/node_shared_memory.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/usable_cpus.h"

namespace harness {

namespace {

constexpr std::size_t kPageBytes = 4096;
// One cache line per rank: its arrival count, then what its current call reduces.
constexpr std::size_t kFlagBytes = 64;
constexpr std::size_t kScratchFloats = 256 * 1024;  // 1 MiB per rank
constexpr int kSpinsBeforeYielding = 2048;          // about 0.1-0.2 ms of pause instructions

std::size_t round_up(std::size_t bytes, std::size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

// The flags are shared between processes: only an address-free, lock-free atomic is the same
// object in both.
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

// A POSIX shared-memory object mapped by every rank of a communicator. Rank 0 creates it once
// every rank is in the constructor; each rank reserves its share of the pages (so they are
// placed on its own NUMA node), maps it, and rank 0 removes the name as soon as all have mapped
// it, or on any error. Only a job killed inside the constructor can leave a name in /dev/shm.
// Unmapped when the last owner lets go (which may be after the backend is gone).
class SharedMapping {
 public:
  // Collective. Throws CommError on every rank when any rank cannot map it.
  SharedMapping(const Communicator& communicator, std::size_t bytes, std::string_view backend)
      : bytes_(bytes) {
    const int rank = communicator.rank();
    check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
    // Rank 0's verdict, then the name or the error: one broadcast of a fixed-size message.
    std::array<char, 512> message{};
    if (rank == 0) {
      static int created = 0;
      name_ = fmt::format("/harness-shm-{}-{}", ::getpid(), created++);
      const std::string error = create();
      const std::string& text = error.empty() ? name_ : error;
      std::copy_n(text.c_str(), std::min(text.size(), message.size() - 1), message.data());
    }
    try {
      check_mpi(
          MPI_Bcast(message.data(), static_cast<int>(message.size()), MPI_CHAR, 0, communicator.handle()),
          "MPI_Bcast");
      const std::string text(message.data());
      std::string error = text.starts_with('/') ? std::string() : text;
      if (error.empty()) error = map_share(text, rank, communicator.size());
      int mapped = error.empty() ? 1 : 0;
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, communicator.handle()),
                "MPI_Allreduce");
      unlink_name();
      if (mapped == 0) {
        throw CommError(
            fmt::format("backend \"{}\": ", backend) +
            (error.empty() ? std::string("another rank could not map the shared memory (see "
                                         "its message)")
                           : error));
      }
    } catch (...) {
      unlink_name();
      if (data_ != nullptr) ::munmap(data_, bytes_);
      throw;
    }
  }
  ~SharedMapping() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;

  std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  // Rank 0: the object, sized but with no pages yet.
  std::string create() {
    const int fd = ::shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
      const std::string error =
          fmt::format("shm_open({}) failed: {} (is /dev/shm mounted and writable?)", name_,
                      std::strerror(errno));
      name_.clear();
      return error;
    }
    std::string error;
    if (::ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
      error = fmt::format("ftruncate({}) failed: {}", name_, std::strerror(errno));
    }
    ::close(fd);
    return error;
  }

  // Every rank: reserves its share of the pages, then maps the whole object.
  std::string map_share(const std::string& name, int rank, int ranks) {
    const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) {
      return fmt::format(
          "shm_open({}) failed: {} (the ranks must share /dev/shm: one host, one container)",
          name, std::strerror(errno));
    }
    // posix_fallocate reserves the pages now: a /dev/shm too small for them is an error here,
    // where the first store past the limit would raise SIGBUS.
    const std::size_t pages = round_up(bytes_, kPageBytes) / kPageBytes;
    const std::size_t first = pages * static_cast<std::size_t>(rank) / ranks * kPageBytes;
    const std::size_t last =
        std::min(bytes_, pages * static_cast<std::size_t>(rank + 1) / ranks * kPageBytes);
    std::string error;
    const int reserved =
        last > first ? ::posix_fallocate(fd, static_cast<off_t>(first),
                                         static_cast<off_t>(last - first))
                     : 0;
    if (reserved != 0) {
      error = fmt::format(
          "cannot reserve {:.1f} MiB of shared memory in /dev/shm: {} (enlarge /dev/shm, e.g. "
          "docker run --shm-size, or use backend allreduce)",
          static_cast<double>(bytes_) / (1024.0 * 1024.0), std::strerror(reserved));
    } else {
      void* data = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (data == MAP_FAILED) {
        error = fmt::format("mmap({}) failed: {}", name, std::strerror(errno));
      } else {
        data_ = data;
      }
    }
    ::close(fd);
    return error;
  }

  void unlink_name() {
    if (!name_.empty()) ::shm_unlink(name_.c_str());
    name_.clear();
  }

  std::size_t bytes_;
  std::string name_;  // rank 0, until every rank has mapped the object
  void* data_ = nullptr;
};

NodeSharedMemory::NodeSharedMemory(const Communicator& node, std::string_view backend, int reduce_threads)
    : communicator_(node), backend_(backend), rank_(node.rank()), size_(node.size()), threads_(reduce_threads) {
  // More ranks than cores (each rank counting its reduction threads; the cores its affinity mask
  // and cgroup CPU quota leave it, usable_cpus.h): a waiting rank gives its core away at once
  // rather than spinning. So too when MPI was told to (mpirun --mca
  // mpi_yield_when_idle 1, as the local launcher does for simulated hosts, whose ranks share this
  // machine's cores with other "nodes").
  const char* mpi_yields = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  oversubscribed_ = static_cast<long>(size_) * static_cast<long>(threads_.size()) > usable_cpus().cores() ||
                    (mpi_yields != nullptr && std::string_view(mpi_yields) == "1");
  const std::size_t flags_bytes =
      round_up(kFlagBytes * static_cast<std::size_t>(size_), kPageBytes);
  const std::size_t scratch_bytes = kScratchFloats * sizeof(float);
  control_ = std::make_shared<SharedMapping>(
      communicator_, flags_bytes + scratch_bytes * static_cast<std::size_t>(size_), backend_);
  for (int r = 0; r < size_; ++r) {
    scratch_.push_back(reinterpret_cast<float*>(control_->data() + flags_bytes +
                                                scratch_bytes * static_cast<std::size_t>(r)));
  }
  // Every rank's flag starts at zero (new shared memory is zero-filled), so arrivals count from 0.
}

NodeSharedMemory::~NodeSharedMemory() = default;

std::shared_ptr<float> NodeSharedMemory::allocate(std::size_t count) {
  // Segments on page boundaries: no two ranks' data share a cache line.
  const std::size_t segment_bytes =
      round_up(std::max<std::size_t>(count, 1) * sizeof(float), kPageBytes);
  auto mapping = std::make_shared<SharedMapping>(
      communicator_, segment_bytes * static_cast<std::size_t>(size_), backend_);
  Region region;
  region.mapping = mapping;
  region.id = ++regions_allocated_;  // the same on every rank: allocations are collective
  region.count = count;
  region.bytes = segment_bytes * static_cast<std::size_t>(size_);
  for (int r = 0; r < size_; ++r) {
    region.segments.push_back(
        reinterpret_cast<float*>(mapping->data() + segment_bytes * static_cast<std::size_t>(r)));
  }
  float* mine = region.segments[static_cast<std::size_t>(rank_)];
  std::erase_if(regions_, [](const Region& old) { return old.mapping.expired(); });
  regions_.push_back(std::move(region));
  return std::shared_ptr<float>(std::move(mapping), mine);  // shares the mapping's ownership
}

std::atomic_ref<uint64_t> NodeSharedMemory::flag_word(int rank, int word) const {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(
      control_->data() + kFlagBytes * static_cast<std::size_t>(rank) + sizeof(uint64_t) * word));
}

void NodeSharedMemory::arrive_and_wait() {
  const uint64_t target = ++arrivals_;
  // Release: this rank's stores to any segment are visible to whoever sees the flag.
  flag_word(rank_, 0).store(target, std::memory_order_release);
  const int spin_limit = oversubscribed_ ? 0 : kSpinsBeforeYielding;
  for (int r = 0; r < size_; ++r) {
    int spins = 0;
    while (flag_word(r, 0).load(std::memory_order_acquire) < target) {
      if (spins < spin_limit) {
        ++spins;
        cpu_relax();
      } else {
        ::sched_yield();  // let the rank we wait for, or our own training thread, have the core
      }
    }
  }
}

void NodeSharedMemory::arrive_checking(uint64_t region_id, std::size_t offset, std::size_t count) {
  flag_word(rank_, 1).store(region_id, std::memory_order_relaxed);
  flag_word(rank_, 2).store(offset, std::memory_order_relaxed);
  flag_word(rank_, 3).store(count, std::memory_order_relaxed);
  arrive_and_wait();
  // No rank can rewrite its description before this rank arrives again: all read the same.
  for (int r = 0; r < size_; ++r) {
    const uint64_t other_id = flag_word(r, 1).load(std::memory_order_relaxed);
    const uint64_t other_offset = flag_word(r, 2).load(std::memory_order_relaxed);
    const uint64_t other_count = flag_word(r, 3).load(std::memory_order_relaxed);
    if (other_id != region_id || other_offset != offset || other_count != count) {
      throw CommError(fmt::format(
          "backend \"{}\": ranks disagree on a reduction (rank {}: {} elements at offset {} of "
          "buffer {}; rank {}: {} at {} of buffer {}; buffer 0 is memory not from "
          "allocate_buffer): every rank must reduce the same span",
          backend_, rank_, count, offset, region_id, r, other_count, other_offset, other_id));
    }
  }
}

const NodeSharedMemory::Region* NodeSharedMemory::region_holding(std::span<const float> buffer) const {
  const auto first = reinterpret_cast<std::uintptr_t>(buffer.data());
  for (const Region& region : regions_) {
    if (region.mapping.expired()) continue;
    const auto mine =
        reinterpret_cast<std::uintptr_t>(region.segments[static_cast<std::size_t>(rank_)]);
    if (first >= mine && first + buffer.size_bytes() <= mine + region.count * sizeof(float)) return &region;
  }
  return nullptr;
}

std::span<std::byte> NodeSharedMemory::region_memory(const float* pointer) const {
  const Region* region = region_holding(std::span<const float>(pointer, 0));
  if (region == nullptr) return {};
  return {reinterpret_cast<std::byte*>(region->segments[0]), region->bytes};
}

void NodeSharedMemory::reduce(std::span<float> buffer, const SegmentReduction& reduction) {
  if (const Region* region = region_holding(buffer)) {
    const std::shared_ptr<SharedMapping> alive = region->mapping.lock();  // the caller's buffer holds it
    const auto mine = reinterpret_cast<std::uintptr_t>(region->segments[static_cast<std::size_t>(rank_)]);
    const std::size_t offset = (reinterpret_cast<std::uintptr_t>(buffer.data()) - mine) / sizeof(float);
    arrive_checking(region->id, offset, buffer.size());  // every rank's data is in its segment
    reduction(region->segments, offset, buffer.size());
    ++in_place_reductions_;
    return;
  }
  // Memory of the caller's: through the scratch segments, a chunk at a time. Between the last
  // arrival of one chunk's reduction and the first of the next, nobody touches another rank's
  // scratch.
  float* mine = scratch_[static_cast<std::size_t>(rank_)];
  for (std::size_t done = 0; done < buffer.size(); done += kScratchFloats) {
    const std::size_t n = std::min(kScratchFloats, buffer.size() - done);
    std::copy_n(buffer.data() + done, n, mine);
    if (done == 0) {
      arrive_checking(0, 0, buffer.size());
    } else {
      arrive_and_wait();
    }
    reduction(scratch_, 0, n);
    std::copy_n(mine, n, buffer.data() + done);
  }
}

void NodeSharedMemory::sum(const std::vector<float*>& segments, std::size_t begin, std::size_t end,
                           std::span<float* const> targets) {
  threads_.for_each_part(begin, end, [&](std::size_t from, std::size_t to) { sum_segments(segments, from, to, targets); });
}

void sum_segments(const std::vector<float*>& segments, std::size_t begin, std::size_t end,
                  std::span<float* const> targets) {
  constexpr std::size_t kBlock = 1024;
  std::array<float, kBlock> sum;
  for (std::size_t block = begin; block < end; block += kBlock) {
    const std::size_t n = std::min(kBlock, end - block);
    std::copy_n(segments[0] + block, n, sum.data());
    for (std::size_t r = 1; r < segments.size(); ++r) {
      const float* in = segments[r] + block;
      for (std::size_t i = 0; i < n; ++i) sum[i] += in[i];
    }
    for (float* target : targets) std::copy_n(sum.data(), n, target + block);
  }
}

}  // namespace harness
