// Where each rank of a point stood when its job stopped without finishing (a timeout, a kill):
// which ranks were inside the backend's call N and which had not reached it, so that a point
// that hangs says who the others waited for, as Horovod's stall inspector names the ranks
// missing from a collective.
//
// Each rank keeps a slot of its own, a small file <measurements>.where/<rank> beside rank 0's
// measurements, and updates it through a shared mapping: plain stores, no system call, so marking
// every backend call costs nothing a step would notice. The page cache keeps what a killed rank
// wrote, and the harness reads the slots after the job has ended. One file per rank, so that
// ranks on several nodes never share a page of a network file system. On such a file system a
// rank's host writes its page back only every half minute or so: the stages outside the backend's
// calls (few) are written through at once, the calls' marks are not, so a rank on another host
// than the harness may read as standing at an earlier call, or, killed early, as having no slot.
//
// Both rooms use this header: the rank program writes (RankProgressWriter), the harness reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

enum class RankStage : uint32_t {
  kSettingUp = 1,      // after MPI_Init: the point's settings, hosts, GPUs (collectives)
  kLoadingData = 2,    // the workload's data and model
  kBackendSetup = 3,   // the backend's constructor (a collective: memory, communicators)
  kOutsideBackend = 4, // running, between two backend calls (compute, evaluation, writes)
  kInBackend = 5,      // inside a backend call (a collective: it returns once every rank is in)
  kFinishing = 6,      // after the loop: gathering and writing the measurements
  kDone = 7,           // about to leave MPI
  // Inside one of the harness's own collectives between backend calls (an epoch's barriers and
  // loss sum, a partial write's gather): it returns once every rank is in, as a backend call does.
  kInHarnessCollective = 8,
};

// The folder of a run's slots, from the path rank 0 writes its measurements to.
std::string rank_progress_directory(const std::string& measurements_path);

struct RankProgressSlot;

// A rank's slot, written by that rank only. Marking never fails and never throws: where the slot
// cannot be made (no space, a read-only folder), the rank runs on without one.
class RankProgressWriter {
 public:
  RankProgressWriter(const std::string& directory, int rank, std::string_view host);
  ~RankProgressWriter();
  RankProgressWriter(const RankProgressWriter&) = delete;
  RankProgressWriter& operator=(const RankProgressWriter&) = delete;

  // The rank entered `stage`; `calls` is the backend calls that have returned so far (without
  // it, the count stays as last marked).
  void mark(RankStage stage, int64_t calls);
  void mark(RankStage stage);

  // The rank's writer (the last one made in this process and still alive), or null: code far
  // from the worker's main (the trainer's collectives) marks through it.
  static RankProgressWriter* of_this_process();

 private:
  friend class InHarnessCollective;
  void store(RankStage stage, int64_t calls);  // into the mapping, not written through
  uint64_t place() const;                      // the stage and calls last marked

  RankProgressSlot* slot_ = nullptr;
};

// For its scope, the rank is inside one of the harness's own collectives; then back where it
// stood. Without a writer in the process (unit tests), nothing. Not from two threads at once: the
// trainer's collectives run between steps, when no backend call is in flight.
class InHarnessCollective {
 public:
  InHarnessCollective();
  ~InHarnessCollective();
  InHarnessCollective(const InHarnessCollective&) = delete;
  InHarnessCollective& operator=(const InHarnessCollective&) = delete;

 private:
  RankProgressWriter* writer_;
  uint64_t previous_ = 0;
};

// What one rank's slot said.
struct RankProgress {
  int rank = 0;
  std::string host;
  RankStage stage = RankStage::kSettingUp;
  int64_t calls = 0;     // backend calls that had returned
  int64_t since_ns = 0;  // when it entered the stage (wall_clock_ns)
};

// Every readable slot in `directory`, by rank; a missing folder or a damaged slot reads as nothing.
std::vector<RankProgress> read_rank_progress(const std::string& directory);

// One line for the record's reason: the ranks grouped by where they stood, the ones furthest
// behind first (those the others were waiting for), with their hosts and how long they had stood
// there at `now_ns`; ranks of the `ranks` started that left no slot are named too, and slots of
// other ranks are passed over. "" when none of the ranks left one.
std::string describe_rank_progress(const std::vector<RankProgress>& progress, int ranks, int64_t now_ns);

// CLOCK_REALTIME_COARSE in nanoseconds: comparable between the ranks and the harness on one
// machine, to a few milliseconds.
int64_t wall_clock_ns();

}  // namespace harness
