#include "harness/common/rank_progress.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace harness {

// One rank's slot: the whole file. Written by its rank through a shared mapping, read by the
// harness after the job.
struct RankProgressSlot {
  uint64_t magic;
  uint32_t rank;
  uint32_t unused;
  // Where the rank stands, in one word (calls << 8 | stage), so that no reader sees a stage with
  // the count of another.
  uint64_t place;
  int64_t since_ns;
  char host[96];
};

namespace {

constexpr uint64_t kSlotMagic = 0x3252484e52414857;  // "WHARNRH2"
static_assert(sizeof(RankProgressSlot) == 128);

uint64_t place_of(RankStage stage, int64_t calls) {
  return static_cast<uint64_t>(calls) << 8 | static_cast<uint32_t>(stage);
}
RankStage stage_of(uint64_t place) { return static_cast<RankStage>(place & 0xff); }
int64_t calls_of(uint64_t place) { return static_cast<int64_t>(place >> 8); }

bool is_stage(uint32_t stage) {
  return stage >= static_cast<uint32_t>(RankStage::kSettingUp) &&
         stage <= static_cast<uint32_t>(RankStage::kInHarnessCollective);
}

RankProgressWriter* this_process_writer = nullptr;

std::string_view stage_text(RankStage stage) {
  switch (stage) {
    case RankStage::kSettingUp: return "setting up";
    case RankStage::kLoadingData: return "loading the data and model";
    case RankStage::kBackendSetup: return "setting up the backend";
    case RankStage::kOutsideBackend: return "outside the backend";
    case RankStage::kInBackend: return "inside the backend";
    case RankStage::kFinishing: return "writing the measurements";
    case RankStage::kDone: return "done";
    case RankStage::kInHarnessCollective: return "in a collective of the harness's own";
  }
  return "?";
}

// "0-3,5,7-8"; after 8 such runs, "...,... (N in all)", so that thousands of ranks stay short.
std::string rank_list(const std::vector<int>& ranks) {
  constexpr int kMostRunsNamed = 8;
  std::string text;
  int runs = 0;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (runs++ == kMostRunsNamed) return text + fmt::format(",... ({} in all)", ranks.size());
    if (!text.empty()) text += ",";
    text += j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return text;
}

std::string host_list(const std::set<std::string>& hosts) {
  constexpr std::size_t kMostHostsNamed = 3;
  std::string text;
  std::size_t named = 0;
  for (const std::string& host : hosts) {
    if (named == kMostHostsNamed) return text + fmt::format(" and {} more", hosts.size() - named);
    text += (named++ > 0 ? ", " : "") + host;
  }
  return text;
}

}  // namespace

std::string rank_progress_directory(const std::string& measurements_path) { return measurements_path + ".where"; }

int64_t wall_clock_ns() {
  // The coarse clock: a few nanoseconds to read (the precise one costs 30 ns, twice per backend
  // call), and its resolution, the scheduler's tick (1-4 ms), is plenty for "stood there for 6.1 s".
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

RankProgressWriter::RankProgressWriter(const std::string& directory, int rank, std::string_view host) {
  std::error_code ignored;
  std::filesystem::create_directories(directory, ignored);
  // Only into a folder of its own, opened once, and as a file of its own: neither the folder nor
  // the slot may be a link someone planted in the results directory (O_NOFOLLOW on both), nor the
  // slot a FIFO or a hard link to a file elsewhere (which truncating would empty).
  const int folder = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (folder < 0) return;
  const int fd =
      ::openat(folder, std::to_string(rank).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  ::close(folder);
  if (fd < 0) return;
  struct stat file {};
  // posix_fallocate: a full disk is found here, not as SIGBUS at the first store.
  if (::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && file.st_nlink == 1 && ::ftruncate(fd, 0) == 0 &&
      ::posix_fallocate(fd, 0, sizeof(RankProgressSlot)) == 0) {
    void* mapped = ::mmap(nullptr, sizeof(RankProgressSlot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped != MAP_FAILED) slot_ = static_cast<RankProgressSlot*>(mapped);
  }
  ::close(fd);
  if (slot_ == nullptr) return;
  slot_->rank = static_cast<uint32_t>(rank);
  const std::size_t length = std::min(host.size(), sizeof(slot_->host) - 1);
  std::memcpy(slot_->host, host.data(), length);
  slot_->host[length] = '\0';
  store(RankStage::kSettingUp, 0);
  // Last: a slot with the magic is whole. Then written through, as every stage but the calls'.
  std::atomic_ref<uint64_t>(slot_->magic).store(kSlotMagic, std::memory_order_release);
  ::msync(slot_, sizeof(RankProgressSlot), MS_SYNC);
  this_process_writer = this;
}

RankProgressWriter::~RankProgressWriter() {
  if (this_process_writer == this) this_process_writer = nullptr;
  if (slot_ != nullptr) ::munmap(slot_, sizeof(RankProgressSlot));
}

RankProgressWriter* RankProgressWriter::of_this_process() { return this_process_writer; }

uint64_t RankProgressWriter::place() const {
  return std::atomic_ref<uint64_t>(slot_->place).load(std::memory_order_relaxed);
}

InHarnessCollective::InHarnessCollective() : writer_(RankProgressWriter::of_this_process()) {
  if (writer_ == nullptr) return;
  previous_ = writer_->place();
  writer_->mark(RankStage::kInHarnessCollective, calls_of(previous_));
}

InHarnessCollective::~InHarnessCollective() {
  if (writer_ != nullptr) writer_->mark(stage_of(previous_), calls_of(previous_));
}

void RankProgressWriter::store(RankStage stage, int64_t calls) {
  // The reader is another process, and reads after this one has stopped: the time, then the place
  // in one store.
  std::atomic_ref<int64_t>(slot_->since_ns).store(wall_clock_ns(), std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(slot_->place).store(place_of(stage, calls), std::memory_order_release);
}

void RankProgressWriter::mark(RankStage stage, int64_t calls) {
  if (slot_ == nullptr) return;
  store(stage, calls);
  // The stages around the backend's calls are few: each is written through to the file at once,
  // so that a harness on another host, reading over a network file system, sees it (this host's
  // page cache writes the per-call marks back only every half minute or so). Not the calls, nor
  // the harness's collectives between them (an epoch's end is inside its timed time).
  const bool per_call = stage == RankStage::kInBackend || stage == RankStage::kInHarnessCollective ||
                        (stage == RankStage::kOutsideBackend && calls > 0);
  if (!per_call) ::msync(slot_, sizeof(RankProgressSlot), MS_SYNC);
}

void RankProgressWriter::mark(RankStage stage) {
  if (slot_ == nullptr) return;
  mark(stage, calls_of(place()));
}

namespace {

// One slot file, or nothing: only a regular file of a slot's size that holds a whole slot, named
// by its rank. O_NONBLOCK: a FIFO planted in the folder must not stop the harness.
std::optional<RankProgress> read_slot(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  RankProgressSlot slot{};
  struct stat file {};
  const bool whole = ::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && file.st_size == sizeof(slot) &&
                     ::read(fd, &slot, sizeof(slot)) == static_cast<ssize_t>(sizeof(slot));
  ::close(fd);
  if (!whole || slot.magic != kSlotMagic || !is_stage(static_cast<uint32_t>(stage_of(slot.place))) ||
      slot.rank > INT_MAX || slot.since_ns <= 0 || path.filename() != std::to_string(slot.rank)) {
    return std::nullopt;
  }
  slot.host[sizeof(slot.host) - 1] = '\0';
  std::string host(slot.host);
  // One line, whatever a host name holds.
  for (char& c : host) {
    if (std::iscntrl(static_cast<unsigned char>(c))) c = '?';
  }
  return RankProgress{static_cast<int>(slot.rank), host, stage_of(slot.place), calls_of(slot.place), slot.since_ns};
}

}  // namespace

std::vector<RankProgress> read_rank_progress(const std::string& directory) {
  std::vector<RankProgress> progress;
  std::error_code error;
  // A linked folder is not one the ranks wrote (they refuse to write through a link).
  if (!std::filesystem::is_directory(std::filesystem::symlink_status(directory, error))) return progress;
  // increment(error): a folder that cannot be listed to its end (an I/O error, a stale handle)
  // reads as what was listed.
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    if (std::optional<RankProgress> slot = read_slot(it->path())) progress.push_back(std::move(*slot));
  }
  std::sort(progress.begin(), progress.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return progress;
}

std::string describe_rank_progress(const std::vector<RankProgress>& progress, int ranks, int64_t now_ns) {
  // Ranks that stand at one place: the furthest behind first (fewest calls returned, then the
  // earlier stage), as those are what the others wait for.
  struct Group {
    std::vector<int> ranks;
    std::set<std::string> hosts;
    int64_t earliest_ns = INT64_MAX;
  };
  std::map<std::tuple<int64_t, uint32_t>, Group> groups;
  std::set<int> seen;
  for (const RankProgress& rank : progress) {
    if (rank.rank < 0 || rank.rank >= ranks) continue;  // not one of this point's ranks
    Group& group = groups[{rank.calls, static_cast<uint32_t>(rank.stage)}];
    group.ranks.push_back(rank.rank);
    group.hosts.insert(rank.host);
    group.earliest_ns = std::min(group.earliest_ns, rank.since_ns);
    seen.insert(rank.rank);
  }
  if (groups.empty()) return "";
  constexpr std::size_t kMostGroupsNamed = 4;
  std::string text;
  std::size_t named = 0;
  for (const auto& [where, group] : groups) {
    if (named == kMostGroupsNamed) {
      text += fmt::format("; {} more group(s)", groups.size() - named);
      break;
    }
    const auto [calls, stage] = where;
    const auto rank_stage = static_cast<RankStage>(stage);
    std::string place(stage_text(rank_stage));
    if (rank_stage == RankStage::kInBackend) place += fmt::format(" (call {})", calls + 1);
    if (rank_stage == RankStage::kOutsideBackend || rank_stage == RankStage::kInHarnessCollective) {
      place += calls == 0 ? std::string(" (before its first call)") : fmt::format(" (after call {})", calls);
    }
    const double seconds = std::max(0.0, (static_cast<double>(now_ns) - static_cast<double>(group.earliest_ns)) / 1e9);
    text += fmt::format("{}{} {} on {}: {} for {:.1f} s", named++ > 0 ? "; " : "", group.ranks.size() == 1 ? "rank" : "ranks",
                        rank_list(group.ranks), host_list(group.hosts), place, seconds);
  }
  std::vector<int> silent;
  for (int rank = 0; rank < ranks; ++rank) {
    if (!seen.count(rank)) silent.push_back(rank);
  }
  if (!silent.empty()) {
    text += fmt::format("; {} {}: no slot (not started, or not yet written back by its host)",
                        silent.size() == 1 ? "rank" : "ranks", rank_list(silent));
  }
  return text;
}

}  // namespace harness
