#include "harness/rank/async_ps.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "backends/injected_delay.h"
#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/rank_progress.h"
#include "harness/common/shuffle.h"
#include "harness/rank/polling_wait.h"
#include "harness/rank/training_parts.h"
#include "schemes/registry.h"

namespace harness {
namespace {

// Tags of the scheme's messages; the pairs go out back to back from one sender to one receiver,
// so MPI's ordering keeps each header before its payload.
constexpr int kPushTag = 5201;        // worker -> server: PushHeader
constexpr int kGradientTag = 5202;    // worker -> server: the slice's gradient (after a PushHeader with one)
constexpr int kReplyTag = 5203;       // server -> worker: ReplyHeader
constexpr int kParametersTag = 5204;  // server -> worker: the slice's parameters

struct PushHeader {
  int64_t has_gradient = 0;  // 0: the worker asks for its first batch of the segment
  double loss = 0;           // the batch's mean loss
};

struct ReplyHeader {
  int64_t batch = -1;  // server 0: the worker's next batch; -1: none left in the segment (and other servers)
  double held_s = 0;   // how long the server held this reply back for the staleness bound
};

// A dense tensor's elements in its memory order (what every rank's copy of a parameter shares).
void copy_out(const torch::Tensor& tensor, float* to) {
  std::memcpy(to, tensor.data_ptr<float>(), static_cast<std::size_t>(tensor.numel()) * sizeof(float));
}

}  // namespace

AsyncParameterServer::Slice AsyncParameterServer::slice_of(int64_t count, int server, int servers) {
  return {count * server / servers, count * (server + 1) / servers};
}

// What train() carries from segment to segment.
struct AsyncParameterServer::Run {
  LoopResult result;
  int64_t batch = 0;               // samples per batch (a worker's step)
  int64_t batches_per_epoch = 0;   // steps per epoch x workers
  std::vector<int64_t> permutation;
  std::vector<float> flat;         // the flattened parameters, every rank's scratch
  // Server 0: the loss of every applied gradient, into the epoch's sum and the loss curve's windows.
  double epoch_loss = 0;
  int64_t window_gradients = 0;    // a window's length: loss_every steps of W gradients
  int64_t total_gradients = 0;
  int64_t gradients_applied = 0;   // over the whole run
  double window_loss = 0;
  int64_t in_window = 0;
  int64_t samples_seen = 0;
  Clock::time_point last_progress_line;

  void count_loss(double loss) {
    epoch_loss += loss;
    window_loss += loss;
    ++gradients_applied;
    if (++in_window == window_gradients || gradients_applied == total_gradients) {
      result.loss_curve.push_back({gradients_applied * batch, window_loss / static_cast<double>(in_window)});
      window_loss = 0;
      in_window = 0;
    }
  }
};

// A stretch of an epoch's batches that ends with every rank idle: the warm-up steps, the timed rest.
struct AsyncParameterServer::Segment {
  int epoch = 1;
  int64_t first_batch = 0;  // in the epoch's permutation, in batches
  int64_t batches = 0;
  bool timed = true;
};

class AsyncParameterServer::Server {
 public:
  Server(const AsyncParameterServer& scheme, int server)
      : scheme_(scheme),
        server_(server),
        slice_(slice_of(scheme.parameter_count_, server, scheme.servers_)),
        workers_(scheme.workers_),
        lockstep_(scheme.max_staleness_ == 0),
        values_(static_cast<std::size_t>(slice_.end - slice_.begin)),
        // Lockstep keeps a step's gradients until all are in; otherwise each is applied as it comes.
        gradients_(lockstep_ ? static_cast<std::size_t>(workers_) : 1, std::vector<float>(values_.size())),
        replies_(static_cast<std::size_t>(workers_), std::vector<float>(values_.size())),
        reply_headers_(static_cast<std::size_t>(workers_)),
        sends_(static_cast<std::size_t>(workers_), {MPI_REQUEST_NULL, MPI_REQUEST_NULL}) {}

  // The slice of `flat`, the flattened parameters every rank starts from.
  void load(const std::vector<float>& flat) {
    std::copy(flat.begin() + slice_.begin, flat.begin() + slice_.end, values_.begin());
  }
  const std::vector<float>& values() const { return values_; }

  // Serves the segment: returns once every batch's gradient is applied and every worker answered.
  void serve(const Segment& segment, Run& run);

 private:
  const AsyncParameterServer& scheme_;
  int server_;
  Slice slice_;
  int workers_;
  bool lockstep_;  // max_staleness 0: one update per step from all W gradients
  std::vector<float> values_;
  std::vector<std::vector<float>> gradients_;  // as received: per worker in lockstep, else one
  std::vector<std::vector<float>> replies_;    // per worker, the slice as sent
  std::vector<ReplyHeader> reply_headers_;
  std::vector<std::array<MPI_Request, 2>> sends_;

  // The segment's state, per worker: gradients pushed, the slowest worker's count when it was
  // last answered, whether it waits for a reply, since when, and its latest loss (lockstep).
  std::vector<int64_t> pushed_;
  std::vector<int64_t> read_slowest_;
  std::vector<char> waiting_;
  std::vector<Clock::time_point> waiting_since_;
  std::vector<double> losses_;
  int64_t asked_ = 0;        // first requests received
  int64_t applied_ = 0;      // gradients applied
  int64_t handed_out_ = 0;   // server 0: batches given to workers
  const Segment* segment_ = nullptr;
  Run* run_ = nullptr;

  void receive(int worker);
  void apply(const std::vector<float>& gradient);
  void record_staleness(int64_t staleness);
  void answer_those_allowed();
  void answer(int worker, int64_t slowest);
  int64_t slowest() const { return *std::min_element(pushed_.begin(), pushed_.end()); }
  bool segment_applied() const { return applied_ == segment_->batches; }
};

void AsyncParameterServer::Server::serve(const Segment& segment, Run& run) {
  const auto w = static_cast<std::size_t>(workers_);
  pushed_.assign(w, 0);
  read_slowest_.assign(w, 0);
  waiting_.assign(w, 0);
  waiting_since_.assign(w, Clock::now());
  losses_.assign(w, 0);
  asked_ = applied_ = handed_out_ = 0;
  segment_ = &segment;
  run_ = &run;
  const auto start = Clock::now();
  double busy_s = 0;

  // The loop polls rather than blocks (async_ps.h): MPI_Iprobe for any worker's push, and a
  // sleep that doubles while none comes, so that an idle server leaves its core to the workers.
  PollBackoff backoff;
  while (asked_ < workers_ || !segment_applied() ||
         std::find(waiting_.begin(), waiting_.end(), 1) != waiting_.end()) {
    int arrived = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kPushTag, scheme_.communicator_.handle(), &arrived, &status),
              "MPI_Iprobe(async_ps push)");
    if (arrived == 0) {
      backoff.sleep();
      continue;
    }
    backoff.reset();
    const auto handling = Clock::now();
    receive(status.MPI_SOURCE - scheme_.servers_);
    answer_those_allowed();
    busy_s += seconds_since(handling);
  }
  for (auto& pair : sends_) wait_all_polling(pair.data(), pair.size());
  if (segment.timed) {
    run.result.async_ps.busy_s += busy_s;
    run.result.async_ps.serving_s += seconds_since(start);
  }
}

void AsyncParameterServer::Server::receive(int worker) {
  const auto w = static_cast<std::size_t>(worker);
  const int source = worker + scheme_.servers_;
  PushHeader header;
  check_mpi(MPI_Recv(&header, sizeof header, MPI_BYTE, source, kPushTag, scheme_.communicator_.handle(),
                     MPI_STATUS_IGNORE),
            "MPI_Recv(async_ps push)");
  waiting_[w] = 1;
  if (header.has_gradient == 0) {
    ++asked_;
    waiting_since_[w] = Clock::now();
    return;
  }
  std::vector<float>& gradient = gradients_[lockstep_ ? w : 0];
  check_mpi(MPI_Recv(gradient.data(), static_cast<int>(gradient.size()), MPI_FLOAT, source, kGradientTag,
                     scheme_.communicator_.handle(), MPI_STATUS_IGNORE),
            "MPI_Recv(async_ps gradient)");
  if (lockstep_) {
    losses_[w] = header.loss;  // applied with the step's others, once all are in
  } else {
    record_staleness(pushed_[w] - read_slowest_[w]);
    apply(gradient);
    ++applied_;
    if (server_ == 0) run_->count_loss(header.loss);
  }
  ++pushed_[w];
  // From here on the worker waits for the bound (or, in lockstep, for the step's other workers),
  // not for its own gradient's handling.
  waiting_since_[w] = Clock::now();
}

// values -= lr x gradient / W, with the learning rate of the step the applied gradients have
// reached in the epoch. The same float expression as the synchronous step's scale and update.
void AsyncParameterServer::Server::apply(const std::vector<float>& gradient) {
  const int64_t step_in_epoch = (segment_->first_batch + applied_) / workers_;
  const double epochs_done =
      (segment_->epoch - 1) + static_cast<double>(step_in_epoch) / static_cast<double>(run_->result.steps_per_epoch);
  const auto lr = static_cast<float>(learning_rate(scheme_.settings_, workers_, epochs_done));
  const float scale = 1.0F / static_cast<float>(workers_);
  for (std::size_t i = 0; i < values_.size(); ++i) values_[i] -= lr * (gradient[i] * scale);
}

void AsyncParameterServer::Server::record_staleness(int64_t staleness) {
  auto& counts = run_->result.async_ps.staleness_counts;
  if (!segment_->timed) return;
  if (counts.size() <= static_cast<std::size_t>(staleness)) counts.resize(static_cast<std::size_t>(staleness) + 1, 0);
  ++counts[static_cast<std::size_t>(staleness)];
}

void AsyncParameterServer::Server::answer_those_allowed() {
  if (lockstep_) {
    // Synchronous: nobody goes on before every worker has pushed this step's gradient (or asked
    // for its first batch). Then one update, the gradients summed in worker order, and the
    // answers in worker order, so that worker w takes the step's w-th batch, as under sync.
    if (std::find(waiting_.begin(), waiting_.end(), 0) != waiting_.end()) return;
    if (pushed_[0] > 0 && applied_ < pushed_[0] * workers_) {
      std::vector<float> sum = gradients_[0];
      for (std::size_t w = 1; w < gradients_.size(); ++w) {
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += gradients_[w][i];
      }
      apply(sum);
      applied_ += workers_;
      for (std::size_t w = 0; w < losses_.size(); ++w) {
        record_staleness(0);
        if (server_ == 0) run_->count_loss(losses_[w]);
      }
    }
    for (int w = 0; w < workers_; ++w) answer(w, slowest());
    return;
  }
  // Stale synchronous parallel: a worker goes on while it is at most max_staleness steps ahead of
  // the slowest; once every batch is applied, all go on (to be told the segment is over).
  const int64_t slowest_pushed = slowest();
  for (int w = 0; w < workers_; ++w) {
    if (waiting_[static_cast<std::size_t>(w)] == 0) continue;
    const bool allowed = !scheme_.max_staleness_.has_value() ||
                         pushed_[static_cast<std::size_t>(w)] - slowest_pushed <= *scheme_.max_staleness_;
    if (allowed || segment_applied()) answer(w, slowest_pushed);
  }
}

void AsyncParameterServer::Server::answer(int worker, int64_t slowest_pushed) {
  const auto w = static_cast<std::size_t>(worker);
  // The previous answer's sends went out before the worker could push again: this returns at once.
  wait_all_polling(sends_[w].data(), sends_[w].size());
  ReplyHeader& header = reply_headers_[w];
  header.batch = -1;
  if (server_ == 0 && handed_out_ < segment_->batches) header.batch = segment_->first_batch + handed_out_++;
  header.held_s = seconds_since(waiting_since_[w]);
  replies_[w] = values_;
  const int destination = worker + scheme_.servers_;
  check_mpi(MPI_Isend(&header, sizeof header, MPI_BYTE, destination, kReplyTag, scheme_.communicator_.handle(),
                      &sends_[w][0]),
            "MPI_Isend(async_ps reply)");
  check_mpi(MPI_Isend(replies_[w].data(), static_cast<int>(replies_[w].size()), MPI_FLOAT, destination,
                      kParametersTag, scheme_.communicator_.handle(), &sends_[w][1]),
            "MPI_Isend(async_ps parameters)");
  read_slowest_[w] = slowest_pushed;
  waiting_[w] = 0;
}

class AsyncParameterServer::Worker {
 public:
  explicit Worker(AsyncParameterServer& scheme)
      : scheme_(scheme),
        gradient_(static_cast<std::size_t>(scheme.parameter_count_)),
        headers_(static_cast<std::size_t>(scheme.servers_)),
        requests_(4 * static_cast<std::size_t>(scheme.servers_), MPI_REQUEST_NULL) {}

  // Works through the segment's batches, as server 0 hands them out, until it has none left.
  void work(const Segment& segment, Run& run);

 private:
  AsyncParameterServer& scheme_;
  std::vector<float> gradient_;    // the flattened gradient pushed, sliced by server
  std::vector<ReplyHeader> headers_;
  PushHeader push_;
  std::vector<MPI_Request> requests_;  // per server: reply, parameters, push, gradient

  // Pushes (without a gradient: asks for the segment's first batch) and takes every server's
  // answer into the model; returns server 0's next batch and the longest hold.
  int64_t exchange(bool with_gradient, double loss, Run& run, double& held_s);
  void flatten_gradients();
};

int64_t AsyncParameterServer::Worker::exchange(bool with_gradient, double loss, Run& run, double& held_s) {
  const MPI_Comm comm = scheme_.communicator_.handle();
  push_ = {with_gradient ? 1 : 0, loss};
  for (int k = 0; k < scheme_.servers_; ++k) {
    const Slice slice = slice_of(scheme_.parameter_count_, k, scheme_.servers_);
    const auto count = static_cast<int>(slice.end - slice.begin);
    MPI_Request* mine = &requests_[4 * static_cast<std::size_t>(k)];
    // The answers' receives first: a server's Isend then meets a posted receive.
    check_mpi(MPI_Irecv(&headers_[static_cast<std::size_t>(k)], sizeof(ReplyHeader), MPI_BYTE, k, kReplyTag, comm,
                        &mine[0]),
              "MPI_Irecv(async_ps reply)");
    check_mpi(MPI_Irecv(run.flat.data() + slice.begin, count, MPI_FLOAT, k, kParametersTag, comm, &mine[1]),
              "MPI_Irecv(async_ps parameters)");
    check_mpi(MPI_Isend(&push_, sizeof push_, MPI_BYTE, k, kPushTag, comm, &mine[2]), "MPI_Isend(async_ps push)");
    if (with_gradient) {
      check_mpi(MPI_Isend(gradient_.data() + slice.begin, count, MPI_FLOAT, k, kGradientTag, comm, &mine[3]),
                "MPI_Isend(async_ps gradient)");
    }
  }
  wait_all_polling(requests_.data(), requests_.size());
  scheme_.load_parameters(run.flat);
  held_s = 0;
  for (const ReplyHeader& header : headers_) held_s = std::max(held_s, header.held_s);
  return headers_[0].batch;
}

void AsyncParameterServer::Worker::flatten_gradients() {
  int64_t offset = 0;
  for (const auto& parameter : scheme_.parameters_) {
    const torch::Tensor& gradient = parameter.grad();
    float* to = gradient_.data() + offset;
    if (gradient.strides() == parameter.strides() && gradient.is_non_overlapping_and_dense()) {
      copy_out(gradient, to);
    } else {  // in the parameter's memory order, as the servers' slices are
      copy_out(torch::empty_like(parameter, torch::MemoryFormat::Preserve).copy_(gradient), to);
    }
    offset += parameter.numel();
  }
}

void AsyncParameterServer::Worker::work(const Segment& segment, Run& run) {
  StepTimes& steps = run.result.steps;
  double held_s = 0;
  int64_t batch = exchange(false, 0, run, held_s);
  while (batch >= 0) {
    const auto start = Clock::now();
    for (auto& parameter : scheme_.parameters_) parameter.mutable_grad().zero_();
    const std::span<const int64_t> positions(run.permutation.data() + batch * run.batch,
                                             static_cast<std::size_t>(run.batch));
    const double loss = scheme_.workload_.forward_backward(positions);
    inject_compute_delay(scheme_.communicator_.rank(), scheme_.settings_.inject_compute_delay_rank,
                         scheme_.settings_.inject_compute_delay_ms);
    flatten_gradients();
    const auto computed = Clock::now();
    batch = exchange(true, loss, run, held_s);
    const auto end = Clock::now();
    if (!segment.timed) continue;
    ++run.result.async_ps.batches;
    const double exposed_s = seconds_between(computed, end);
    steps.compute_s.push_back(seconds_between(start, computed));
    steps.comm_s.push_back(exposed_s);
    steps.exposed_s.push_back(exposed_s);
    steps.step_s.push_back(seconds_between(start, end));
    steps.held_s.push_back(std::min(held_s, exposed_s));
  }
}

AsyncParameterServer::AsyncParameterServer(Workload& workload, const Communicator& communicator,
                                           const PointSettings& settings)
    : workload_(workload),
      communicator_(communicator),
      settings_(settings),
      servers_(ps_servers(settings)),
      workers_(communicator.size() - servers_),
      worker_index_(communicator.rank() < servers_ ? -1 : communicator.rank() - servers_),
      max_staleness_(max_staleness(settings)),
      parameters_(exchangeable_parameters(workload, "async_ps", true)) {
  sleep_precisely();  // every wait of the scheme sleeps between polls (polling_wait.h)
  if (servers_ < 1 || workers_ < 1) {
    throw ConfigError(fmt::format("ps_servers: {} servers of {} ranks leave no worker", servers_, communicator.size()));
  }
  for (const auto& parameter : parameters_) parameter_count_ += parameter.numel();
}

void AsyncParameterServer::broadcast_parameters() {
  std::vector<float> flat(static_cast<std::size_t>(parameter_count_));
  store_parameters(flat);
  check_mpi(MPI_Bcast(flat.data(), static_cast<int>(flat.size()), MPI_FLOAT, 0, communicator_.handle()),
            "MPI_Bcast(parameters)");
  load_parameters(flat);
}

void AsyncParameterServer::store_parameters(std::vector<float>& flat) const {
  int64_t offset = 0;
  for (const auto& parameter : parameters_) {
    copy_out(parameter, flat.data() + offset);
    offset += parameter.numel();
  }
}

void AsyncParameterServer::load_parameters(const std::vector<float>& flat) {
  int64_t offset = 0;
  for (auto& parameter : parameters_) {
    std::memcpy(parameter.data_ptr<float>(), flat.data() + offset,
                static_cast<std::size_t>(parameter.numel()) * sizeof(float));
    // As an in-place op would: a graph that still holds the parameter then fails loudly.
    parameter.unsafeGetTensorImpl()->bump_version();
    offset += parameter.numel();
  }
}

LoopResult AsyncParameterServer::train(LoopFlush* flush) {
  Run run;
  LoopResult& result = run.result;
  result.steps_per_epoch = workload_.train_size() / global_batch(settings_, workers_);
  if (result.steps_per_epoch == 0) {
    throw ConfigError(fmt::format("batch_size: the global batch of {} exceeds the {} training samples",
                                  global_batch(settings_, workers_), workload_.train_size()));
  }
  if (settings_.warmup_steps >= result.steps_per_epoch) {
    throw ConfigError(fmt::format("warmup_steps: expected fewer warm-up steps than the {} steps of the first epoch, "
                                  "got {}",
                                  result.steps_per_epoch, settings_.warmup_steps));
  }
  run.batch = per_rank_batch(settings_, workers_);
  run.batches_per_epoch = result.steps_per_epoch * workers_;
  run.permutation.resize(static_cast<std::size_t>(workload_.train_size()));
  run.flat.resize(static_cast<std::size_t>(parameter_count_));
  const int64_t total_steps = result.steps_per_epoch * settings_.epochs;
  run.window_gradients = loss_window_steps(settings_, total_steps) * workers_;
  run.total_gradients = total_steps * workers_;
  run.last_progress_line = Clock::now();

  std::optional<Server> server;
  std::optional<Worker> worker;
  if (worker_index_ < 0) {
    server.emplace(*this, communicator_.rank());
    store_parameters(run.flat);
    server->load(run.flat);
  } else {
    worker.emplace(*this);
  }
  for (int epoch = 1; epoch <= settings_.epochs; ++epoch) {
    std::iota(run.permutation.begin(), run.permutation.end(), 0);
    deterministic_shuffle(run.permutation, static_cast<uint64_t>(settings_.seed), static_cast<uint64_t>(epoch));
    std::vector<Segment> segments;
    const int64_t warmup_batches = epoch == 1 ? settings_.warmup_steps * workers_ : 0;
    if (warmup_batches > 0) segments.push_back({epoch, 0, warmup_batches, false});
    segments.push_back({epoch, warmup_batches, run.batches_per_epoch - warmup_batches, true});
    run.epoch_loss = 0;
    double epoch_start = 0;
    for (const Segment& segment : segments) {
      barrier_polling(communicator_);
      epoch_start = MPI_Wtime();
      if (server) {
        server->serve(segment, run);
      } else {
        worker->work(segment, run);
      }
    }
    barrier_polling(communicator_);
    const double epoch_time = MPI_Wtime() - epoch_start;
    result.train_time_s += epoch_time;
    result.samples_trained += segments.back().batches * run.batch;
    run.samples_seen += run.batches_per_epoch * run.batch;

    // Outside the timed segments: the model onto every rank, the epoch's record on rank 0, and
    // the measurements so far where a flush is due.
    if (server) {
      gather_parameters(run.flat, server->values());
    } else {
      gather_parameters(run.flat, {});
    }
    // Rank 0 serves and never ran a forward pass: it evaluates with the first worker's BatchNorm
    // statistics, as the synchronous parameter server does.
    share_buffers_with_rank_zero(workload_, communicator_, servers_);
    if (communicator_.rank() == 0) record_epoch(epoch, epoch_time, run);
    if (flush != nullptr) {
      LoopResult so_far = result;
      so_far.steps = aligned_steps(result.steps);
      if (flush->due(so_far.steps.step_s.size())) result.flush_time_s += flush->flush(so_far);
    }
  }
  result.steps = aligned_steps(result.steps);
  return std::move(run.result);
}

void AsyncParameterServer::gather_parameters(std::vector<float>& flat, const std::vector<float>& slice) {
  std::vector<int> counts(static_cast<std::size_t>(communicator_.size()), 0);
  std::vector<int> offsets(counts.size(), 0);
  for (int k = 0; k < servers_; ++k) {
    const Slice part = slice_of(parameter_count_, k, servers_);
    counts[static_cast<std::size_t>(k)] = static_cast<int>(part.end - part.begin);
    offsets[static_cast<std::size_t>(k)] = static_cast<int>(part.begin);
  }
  const InHarnessCollective marked;
  check_mpi(MPI_Allgatherv(slice.data(), static_cast<int>(slice.size()), MPI_FLOAT, flat.data(), counts.data(),
                           offsets.data(), MPI_FLOAT, communicator_.handle()),
            "MPI_Allgatherv(async_ps parameters)");
  load_parameters(flat);
}

void AsyncParameterServer::record_epoch(int epoch, double epoch_time, Run& run) {
  const double train_loss = run.epoch_loss / static_cast<double>(run.batches_per_epoch);
  record_evaluated_epoch(workload_, {epoch, settings_.epochs, train_loss, epoch_time, run.samples_seen}, run.result,
                         run.last_progress_line);
}

void AsyncParameterServer::add_measurements(const LoopResult& result, TrainMeasurements& measurements) {
  const AsyncPsCounters& mine = result.async_ps;
  AsyncPsFacts facts;
  facts.servers = servers_;
  // The servers' staleness counts summed (each counts every gradient's slice it applied).
  int64_t longest = static_cast<int64_t>(mine.staleness_counts.size());
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_INT64_T, MPI_MAX, communicator_.handle()),
            "MPI_Allreduce(staleness)");
  std::vector<int64_t> counts = mine.staleness_counts;
  counts.resize(static_cast<std::size_t>(longest), 0);
  facts.staleness_counts.resize(counts.size(), 0);
  check_mpi(MPI_Reduce(counts.data(), facts.staleness_counts.data(), static_cast<int>(counts.size()), MPI_INT64_T,
                       MPI_SUM, 0, communicator_.handle()),
            "MPI_Reduce(staleness)");
  // Every rank's times and batches: the servers' busy fractions, the workers' batches.
  const std::array<double, 3> mine_all{mine.busy_s, mine.serving_s, static_cast<double>(mine.batches)};
  std::vector<double> all(communicator_.rank() == 0 ? 3 * static_cast<std::size_t>(communicator_.size()) : 0);
  check_mpi(MPI_Gather(mine_all.data(), 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, communicator_.handle()),
            "MPI_Gather(async_ps counts)");
  if (communicator_.rank() != 0) return;
  for (int r = 0; r < communicator_.size(); ++r) {
    const double* rank = &all[3 * static_cast<std::size_t>(r)];
    if (r < servers_) {
      facts.server_busy_fraction.push_back(rank[1] > 0 ? rank[0] / rank[1] : 0);
    } else {
      facts.worker_batches.push_back(static_cast<int64_t>(rank[2]));
    }
  }
  measurements.async_ps = std::move(facts);
}

StepTimes AsyncParameterServer::aligned_steps(const StepTimes& steps) const {
  auto fewest = worker_index_ >= 0 ? static_cast<int64_t>(steps.step_s.size()) : std::numeric_limits<int64_t>::max();
  {
    const InHarnessCollective marked;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_INT64_T, MPI_MIN, communicator_.handle()),
              "MPI_Allreduce(async_ps steps)");
  }
  const auto count = static_cast<std::size_t>(fewest);
  const auto first = [&](const std::vector<double>& times) {
    return worker_index_ >= 0 ? std::vector<double>(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(count))
                              : std::vector<double>(count, 0.0);
  };
  return {first(steps.compute_s), first(steps.comm_s), first(steps.exposed_s), first(steps.step_s),
          first(steps.held_s)};
}

}  // namespace harness
