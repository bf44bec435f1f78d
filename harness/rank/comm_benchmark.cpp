#include "harness/rank/comm_benchmark.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "backends/device_probes.h"
#include "backends/device_staging.h"
#include "backends/reduction_threads.h"
#include "harness/results/statistics.h"

namespace harness {
namespace {

// The median over `iterations` of the slowest rank's time (µs) for an operation that returns its
// own time in seconds (device work timed with CUDA events), every rank starting it together after
// a barrier, as the ranks reduce during an allreduce.
template <typename TimedOperation>
double slowest_rank_median_of_us(int iterations, const Communicator& communicator, TimedOperation timed_operation) {
  std::vector<double> seconds(static_cast<std::size_t>(iterations));
  for (double& time : seconds) {
    check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
    time = timed_operation();
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), iterations, MPI_DOUBLE, MPI_MAX, communicator.handle()),
            "MPI_Allreduce(probe times)");
  return 1e6 * median_of(seconds);
}

// The same for `operation`, timed on the host.
template <typename Operation>
double slowest_rank_median_us(int iterations, const Communicator& communicator, Operation operation) {
  return slowest_rank_median_of_us(iterations, communicator, [&operation] {
    const double start = MPI_Wtime();
    operation();
    return MPI_Wtime() - start;
  });
}

// The median over `iterations` of rank 0's time (µs) for `operation`, run by rank 0 alone while
// the others wait at the next barrier: one core's share of the machine, on every rank.
template <typename Operation>
double rank_zero_median_us(int iterations, const Communicator& communicator, Operation operation) {
  std::vector<double> seconds(static_cast<std::size_t>(iterations));
  for (double& time : seconds) {
    check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
    if (communicator.rank() != 0) continue;
    const double start = MPI_Wtime();
    operation();
    time = MPI_Wtime() - start;
  }
  double median = communicator.rank() == 0 ? median_of(seconds) : 0;
  check_mpi(MPI_Bcast(&median, 1, MPI_DOUBLE, 0, communicator.handle()), "MPI_Bcast(probe time)");
  return 1e6 * median;
}

// Two ranks that exchange messages for a link probe; -1 where the layout has no such pair.
struct LinkPair {
  int first = -1;
  int second = -1;
};

// Rank 0 with another rank of its node, and rank 0 with the first rank of another node.
std::pair<LinkPair, LinkPair> node_link_pairs(const Communicator& communicator) {
  const std::vector<std::string> hosts = all_host_names(communicator);
  LinkPair intra;
  LinkPair inter;
  for (int rank = 1; rank < communicator.size(); ++rank) {
    const bool same_node = hosts[static_cast<std::size_t>(rank)] == hosts[0];
    if (same_node && intra.second < 0) intra = {0, rank};
    if (!same_node && inter.second < 0) inter = {0, rank};
  }
  return {intra, inter};
}

// The median bandwidth (10^9 bytes/s each way) of `iterations` MPI_Sendrecv exchanges of `bytes`
// between the pair, the other ranks idle; 0 without a pair. The same on every rank.
double link_bandwidth_gbps(const LinkPair& pair, int64_t bytes, int iterations, const Communicator& communicator) {
  if (pair.second < 0 || bytes == 0) return 0;
  const int rank = communicator.rank();
  const bool in_pair = rank == pair.first || rank == pair.second;
  const int peer = rank == pair.first ? pair.second : pair.first;
  std::vector<char> outgoing(in_pair ? static_cast<std::size_t>(bytes) : 0, 1);
  std::vector<char> incoming(outgoing.size());
  std::vector<double> seconds(static_cast<std::size_t>(iterations));
  for (double& time : seconds) {
    check_mpi(MPI_Barrier(communicator.handle()), "MPI_Barrier");
    if (!in_pair) continue;
    const double start = MPI_Wtime();
    check_mpi(MPI_Sendrecv(outgoing.data(), static_cast<int>(bytes), MPI_BYTE, peer, 7, incoming.data(),
                           static_cast<int>(bytes), MPI_BYTE, peer, 7, communicator.handle(), MPI_STATUS_IGNORE),
              "MPI_Sendrecv(link probe)");
    time = MPI_Wtime() - start;
  }
  double median = rank == pair.first ? median_of(seconds) : 0;
  check_mpi(MPI_Bcast(&median, 1, MPI_DOUBLE, pair.first, communicator.handle()), "MPI_Bcast(link time)");
  return median > 0 ? static_cast<double>(bytes) / median / 1e9 : 0;
}

// Keeps the probes' stores: the buffer they write is read by nobody afterwards.
volatile float probe_sink = 0;

// The elements of `buffer` that differ from `expected` beyond rounding, summed over the ranks.
int64_t count_wrong(std::span<const float> buffer, const std::vector<float>& expected,
                    const Communicator& communicator) {
  int64_t wrong = elements_off(buffer, expected);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, communicator.handle()),
            "MPI_Allreduce(wrong)");
  return wrong;
}

// A size's times (the slowest rank's per iteration) as the median, extremes and bandwidths.
MessageSizeMetrics timing_metrics(int64_t bytes, std::vector<double> seconds, int ranks) {
  const double median = median_of(seconds);
  std::sort(seconds.begin(), seconds.end());
  MessageSizeMetrics result;
  result.bytes = bytes;
  result.time_us_median = 1e6 * median;
  result.time_us_min = 1e6 * seconds.front();
  result.time_us_max = 1e6 * seconds.back();
  result.algbw_gbps = median > 0 ? static_cast<double>(bytes) / median / 1e9 : 0;
  result.busbw_gbps = allreduce_bus_bandwidth(result.algbw_gbps, ranks);
  return result;
}

// The measurements at one message size after another, with what every size shares: the options,
// the GPU staging (device "cuda"), the link probes' pairs and the timeline.
static_assert(kDefaultStagingChunkBytes == static_cast<int64_t>(kStagingChunkFloats * sizeof(float)),
              "staging_chunk_bytes defaults to the staging's own chunk");

class CommBenchmark {
 public:
  CommBenchmark(GradientSync& backend, const Communicator& communicator, const PointSettings& settings,
                Timeline* timeline)
      : backend_(backend),
        communicator_(communicator),
        seed_(settings.seed),
        options_(comm_options(settings)),
        on_device_(settings.device == "cuda"),
        probe_threads_(backend.host_threads()),
        timeline_(timeline),
        traced_per_size_(std::min(options_.iterations, kTracedIterationsPerSize)) {
    if (on_device_) device_sync_.emplace(backend, staging_chunk_floats(settings));
    std::tie(intra_node_, inter_node_) = node_link_pairs(communicator);
  }

  const CommOptions& options() const { return options_; }
  int traced_per_size() const { return traced_per_size_; }

  // One message size: the timed reductions, checked against MPI_Allreduce's sum, and the memory
  // and link probes. Collective.
  MessageSizeMetrics measure(int64_t bytes) {
    const auto count = static_cast<std::size_t>(bytes / 4);
    const std::vector<float> input = random_input(count);
    std::vector<float> expected = input;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, expected.data(), static_cast<int>(count), MPI_FLOAT,
                            MPI_SUM, communicator_.handle()),
              "MPI_Allreduce(reference)");

    // The reduction is in place, so every iteration starts from a fresh copy of the input
    // (the copy is outside the timed region). With device "cuda" the buffer lives in GPU memory
    // and the timed region includes the staging copies, which is what training pays.
    // On the host, in the backend's own memory when it offers some, as the trainer's gradients.
    std::vector<float> own_memory;
    const std::shared_ptr<float> backend_memory =
        on_device_ ? nullptr : backend_.allocate_buffer(count);
    if (!backend_memory) own_memory.resize(count);
    const std::span<float> buffer(backend_memory ? backend_memory.get() : own_memory.data(), count);
    std::optional<DeviceBuffer> device_buffer;
    if (on_device_) device_buffer.emplace(count);
    const auto reset = [&] {
      if (on_device_) {
        device_buffer->copy_from_host(input);
      } else {
        std::memcpy(buffer.data(), input.data(), bytes);
      }
    };
    const auto reduce = [&] {
      if (on_device_) {
        device_sync_->allreduce_sum(device_buffer->data(), count);
      } else {
        backend_.allreduce_sum(buffer);
      }
    };
    std::vector<double> seconds = time_reductions(reset, reduce, bytes);
    if (on_device_) device_buffer->copy_to_host(buffer);
    // The slowest rank's time for each iteration.
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()),
                            MPI_DOUBLE, MPI_MAX, communicator_.handle()),
              "MPI_Allreduce(times)");
    const int64_t wrong = count_wrong(buffer, expected, communicator_);

    MessageSizeMetrics result = timing_metrics(bytes, seconds, communicator_.size());
    result.wrong = wrong;
    if (count > 0) probe_memory(buffer, input, result);
    if (on_device_ && count > 0) probe_device(count, result);
    result.intra_node_gbps = link_bandwidth_gbps(intra_node_, bytes, options_.iterations, communicator_);
    result.inter_node_gbps = link_bandwidth_gbps(inter_node_, bytes, options_.iterations, communicator_);
    return result;
  }

 private:
  // This rank's input: uniform in [-1, 1), from the seed and the rank.
  std::vector<float> random_input(std::size_t count) const {
    std::vector<float> input(count);
    std::mt19937 engine(static_cast<uint32_t>(seed_) + 7919U * static_cast<uint32_t>(communicator_.rank()));
    std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
    for (auto& value : input) value = uniform(engine);
    return input;
  }

  // The warm-up reductions, then options.iterations timed ones, each after a barrier: this rank's
  // seconds for each timed one.
  template <typename Reset, typename Reduce>
  std::vector<double> time_reductions(const Reset& reset, const Reduce& reduce, int64_t bytes) {
    for (int i = 0; i < options_.warmup_iterations; ++i) {
      reset();
      reduce();
    }
    std::vector<double> seconds(static_cast<std::size_t>(options_.iterations));
    for (std::size_t i = 0; i < seconds.size(); ++i) {
      reset();
      check_mpi(MPI_Barrier(communicator_.handle()), "MPI_Barrier");
      // The first barrier that all ranks leave together aligns the timeline's clocks.
      if (timeline_ != nullptr && !clock_started_) {
        timeline_->start_clock();
        clock_started_ = true;
      }
      // Untraced reductions read no extra clock inside the timed region.
      const bool traced = timeline_ != nullptr && static_cast<int>(i) < traced_per_size_;
      const double start = MPI_Wtime();
      const auto traced_start = traced ? Clock::now() : Clock::time_point{};
      reduce();
      seconds[i] = MPI_Wtime() - start;
      if (traced) {
        timeline_->begin_step(static_cast<int64_t>(i));
        timeline_->add(Track::kTraining, "reduce", traced_start, Clock::now(), bytes);
        timeline_->end_step();
      }
    }
    return seconds;
  }

  // What the node's memory allows at this size, in the same conditions as the reductions: the
  // arithmetic a reduction does (the cost model's γ) and a copy, each on as many threads of this
  // rank as the backend adds with (its host_threads(): shm_reduce_threads), split as it splits.
  // After the check, so the buffer's contents no longer matter. The host buffers, also for device
  // "cuda".
  void probe_memory(std::span<float> buffer, const std::vector<float>& input, MessageSizeMetrics& result) {
    const std::size_t count = buffer.size();
    const auto add = [&] {
      probe_threads_.for_each_part(0, count, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) buffer[i] += input[i];
      });
    };
    const auto copy = [&] {
      probe_threads_.for_each_part(0, count, [&](std::size_t begin, std::size_t end) {
        std::memcpy(buffer.data() + begin, input.data() + begin, (end - begin) * sizeof(float));
      });
    };
    result.reduce_probe_us = slowest_rank_median_us(options_.iterations, communicator_, add);
    result.copy_probe_us = slowest_rank_median_us(options_.iterations, communicator_, copy);
    result.reduce_probe_one_us = rank_zero_median_us(options_.iterations, communicator_, add);
    result.copy_probe_one_us = rank_zero_median_us(options_.iterations, communicator_, copy);
    probe_sink = probe_sink + buffer[count / 2];
  }

  // What the GPU allows at this size, in the same conditions as the reductions (every rank at
  // once, so ranks that share a GPU or its link to the host share them here too): a copy of the
  // buffer from device to pinned host memory and back (staging's limit) and one from device to
  // device memory (the limit of a backend that reduces there), each timed on the GPU with CUDA
  // events, in buffers of the probes' own.
  void probe_device(std::size_t count, MessageSizeMetrics& result) const {
    DeviceCopyProbes probes(count);
    const auto median_us = [&](double (DeviceCopyProbes::*copy)()) {
      return slowest_rank_median_of_us(options_.iterations, communicator_, [&] { return (probes.*copy)(); });
    };
    result.device_to_host_probe_us = median_us(&DeviceCopyProbes::device_to_host_s);
    result.host_to_device_probe_us = median_us(&DeviceCopyProbes::host_to_device_s);
    result.device_copy_probe_us = median_us(&DeviceCopyProbes::device_to_device_s);
  }

  GradientSync& backend_;
  const Communicator& communicator_;
  int64_t seed_;
  CommOptions options_;
  bool on_device_;
  ReductionThreads probe_threads_;
  std::optional<DeviceStagedSync> device_sync_;
  LinkPair intra_node_;
  LinkPair inter_node_;
  Timeline* timeline_;
  int traced_per_size_;
  bool clock_started_ = false;
};

}  // namespace

std::vector<int64_t> comm_message_sizes(const CommOptions& options) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = options.min_bytes; bytes < options.max_bytes; bytes *= options.size_factor) {
    sizes.push_back(bytes);
  }
  sizes.push_back(options.max_bytes);
  return sizes;
}

int64_t elements_off(std::span<const float> buffer, std::span<const float> expected) {
  int64_t off = 0;
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    // Written so that a NaN, which compares false with everything, counts as off.
    if (!(std::abs(buffer[i] - expected[i]) <= 1e-5F * std::max(1.0F, std::abs(expected[i])))) ++off;
  }
  return off;
}

double allreduce_bus_bandwidth(double algbw, int ranks) {
  return algbw * 2.0 * (ranks - 1) / ranks;  // 0 for one rank: nothing crosses a link
}

std::vector<MessageSizeMetrics> run_comm_benchmark(GradientSync& backend,
                                                   const Communicator& communicator,
                                                   const PointSettings& settings,
                                                   const CommSizeDone& size_done,
                                                   Timeline* timeline) {
  CommBenchmark benchmark(backend, communicator, settings, timeline);
  const std::vector<int64_t> sizes = comm_message_sizes(benchmark.options());
  if (timeline != nullptr) {
    timeline->trace(communicator.size(), static_cast<int64_t>(sizes.size()) * benchmark.traced_per_size());
    timeline->describe_sample(fmt::format("the first {} timed reductions of each message size (args.step counts "
                                          "them within the size, args.bytes is the size)",
                                          benchmark.traced_per_size()));
  }
  std::vector<MessageSizeMetrics> results;
  for (const int64_t bytes : sizes) {
    results.push_back(benchmark.measure(bytes));
    // Whatever it does here no timed reduction sees: the next size's first collective (the
    // reference allreduce) waits for it, and each timed reduction starts after a barrier.
    if (size_done) size_done(results);
  }
  return results;
}

}  // namespace harness
