#include "harness/rank/gradient_buckets.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/common/clock.h"
#include "harness/common/errors.h"

namespace harness {
namespace {

// A parameter's slice of the fused buffer holds its gradient in the parameter's own memory order
// (a channels-last convolution weight stays channels-last), so that packing and unpacking are
// straight copies. `slice` is that region viewed with the parameter's sizes and strides.
bool same_layout(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides();
}

bool is_view_of(const torch::Tensor& gradient, const torch::Tensor& slice) {
  return gradient.data_ptr() == slice.data_ptr() && same_layout(gradient, slice);
}

// slice = gradient, on the host or the device, whatever the gradient's layout.
void copy_into_fused(const torch::Tensor& gradient, torch::Tensor& slice) {
  if (is_view_of(gradient, slice)) return;  // already there
  if (gradient.is_cpu() && same_layout(gradient, slice)) {
    std::copy_n(gradient.data_ptr<float>(), gradient.numel(), slice.data_ptr<float>());
  } else {
    slice.copy_(gradient);
  }
}

// gradient = slice × scale, on the host or the device.
void copy_scaled_from_fused(const torch::Tensor& slice, float scale, torch::Tensor& gradient) {
  if (is_view_of(gradient, slice)) {
    if (scale != 1.0F) gradient.mul_(scale);  // (unpack() scales all-view buffers in one loop)
  } else if (gradient.is_cpu() && same_layout(gradient, slice)) {
    const float* in = slice.data_ptr<float>();
    float* out = gradient.data_ptr<float>();
    for (int64_t i = 0; i < gradient.numel(); ++i) out[i] = in[i] * scale;
  } else {
    gradient.copy_(slice.mul(scale));
  }
}

}  // namespace

GradientBuckets::GradientBuckets(std::vector<torch::Tensor> parameters, GradientSync& backend,
                                 double bucket_mb, bool overlap, int divisor, std::size_t staging_chunk_floats)
    : parameters_(std::move(parameters)),
      backend_(backend),
      // With nothing to exchange (one rank) there is nothing to overlap: no hooks, no thread.
      overlap_(overlap && backend.exchanges()),
      scale_(1.0F / static_cast<float>(divisor)) {
  if (overlap_) {
    int provided = MPI_THREAD_SINGLE;
    check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      throw NotSupported("overlap: MPI was initialised below MPI_THREAD_SERIALIZED, so a "
                         "communication thread may not call it");
    }
  }
  // Reverse parameter order: backward produces the last layer's gradients first.
  const auto bucket_elements =
      std::max<std::size_t>(1, static_cast<std::size_t>(bucket_mb * 1024 * 1024 / sizeof(float)));
  parameter_offset_.resize(parameters_.size());
  parameter_bucket_.resize(parameters_.size());
  std::size_t offset = 0;
  for (std::size_t i = parameters_.size(); i-- > 0;) {
    const auto elements = static_cast<std::size_t>(parameters_[i].numel());
    if (buckets_.empty() || (buckets_.back().count > 0 &&
                             buckets_.back().count + elements > bucket_elements)) {
      buckets_.push_back(Bucket{offset, 0, {}, 0, false});
    }
    Bucket& bucket = buckets_.back();
    bucket.count += elements;
    bucket.parameters.push_back(i);
    parameter_offset_[i] = offset;
    parameter_bucket_[i] = buckets_.size() - 1;
    offset += elements;
  }
  const torch::Device device = parameters_.empty() ? torch::kCPU : parameters_.front().device();
  // On the CPU, in the backend's memory when it has some to offer (shm reduces it in place).
  // The tensor's storage shares that memory's ownership, as the .grad views below do.
  std::shared_ptr<float> backend_memory = device.is_cpu() ? backend_.allocate_buffer(offset) : nullptr;
  if (backend_memory) {
    fused_tensor_ = torch::from_blob(
        backend_memory.get(), {static_cast<int64_t>(offset)},
        [backend_memory](void* /*data*/) mutable { backend_memory.reset(); }, torch::kFloat32);
  } else {
    fused_tensor_ = torch::empty({static_cast<int64_t>(offset)},
                                 torch::TensorOptions().dtype(torch::kFloat32).device(device));
  }
  if (!device.is_cpu() && backend_.exchanges()) staging_.emplace(backend_, staging_chunk_floats);
  fused_ = fused_tensor_.data_ptr<float>();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    fused_slices_.push_back(fused_tensor_.as_strided(
        parameters_[i].sizes(), parameters_[i].strides(),
        static_cast<int64_t>(parameter_offset_[i])));
  }
  if (!overlap_) {
    // The gradients live in the fused buffer (DDP's gradient_as_bucket_view): autograd
    // accumulates straight into the buckets, so packing copies nothing and unpacking scales in
    // place. Not with overlap: its hooks copy each gradient in before autograd accumulates it,
    // which would then count it twice.
    fused_tensor_.zero_();
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      parameters_[i].mutable_grad() = fused_slices_[i];
    }
  }

  delivered_.assign(parameters_.size(), false);
  if (overlap_) {
    thread_ = std::thread([this] { communication_loop(); });
    try {
      for (std::size_t i = 0; i < parameters_.size(); ++i) {
        // The hook sees the gradient autograd is about to accumulate into .grad. The trainer
        // zeroes .grad before every backward, so this value is the step's whole gradient.
        hooks_.push_back(parameters_[i].register_hook(
            [this, i](const torch::Tensor& gradient) { on_gradient(i, gradient); }));
      }
    } catch (...) {
      stop_thread_and_hooks();
      throw;
    }
  }
}

GradientBuckets::~GradientBuckets() { stop_thread_and_hooks(); }

void GradientBuckets::stop_thread_and_hooks() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    thread_.join();
  }
  for (std::size_t i = 0; i < hooks_.size(); ++i) parameters_[i].remove_hook(hooks_[i]);
  hooks_.clear();
}

bool GradientBuckets::gradients_are_views() const {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!is_view_of(parameters_[i].grad(), fused_slices_[i])) return false;
  }
  return !parameters_.empty();
}

// When the gradients are views of the fused buffer, zeroing and scaling are one plain loop over
// it: a LibTorch call per tensor costs about a microsecond, several per step for the Iris network.
void GradientBuckets::zero_gradients() {
  if (gradients_are_views()) {
    if (!fused_tensor_.is_cpu()) {
      fused_tensor_.zero_();
      return;
    }
    std::fill_n(fused_, fused_tensor_.numel(), 0.0F);
  } else {
    for (auto& parameter : parameters_) parameter.mutable_grad().zero_();
  }
}

void GradientBuckets::begin_step() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_step_ = true;
  for (auto& bucket : buckets_) {
    bucket.pending = static_cast<int>(bucket.parameters.size());
    bucket.launched = false;
  }
  next_launch_ = 0;
  completed_ = 0;
  comm_s_ = 0;
  copy_s_ = 0;
  hook_launches_ = 0;
  queue_.clear();
  failure_ = nullptr;
  std::fill(delivered_.begin(), delivered_.end(), false);
}

void GradientBuckets::on_gradient(std::size_t parameter, const torch::Tensor& gradient) {
  // A backward pass outside begin_step()/finish_step() (evaluation, tests) exchanges nothing.
  if (!in_step_) return;
  if (delivered_[parameter]) {
    // Its bucket may already be on the wire: adding into it now would race and be lost.
    throw NotSupported("overlap: a parameter's gradient arrived twice in one step (several "
                       "backward passes per step are not supported with overlap)");
  }
  delivered_[parameter] = true;
  const auto start = Clock::now();
  copy_into_fused(gradient, fused_slices_[parameter]);
  const double copied = seconds_since(start);
  std::lock_guard<std::mutex> lock(mutex_);
  copy_s_ += copied;
  --buckets_[parameter_bucket_[parameter]].pending;
  const std::size_t before = next_launch_;
  launch_ready_buckets();
  hook_launches_ += next_launch_ - before;
}

void GradientBuckets::pack(const Bucket& bucket) {
  for (const std::size_t i : bucket.parameters) {
    copy_into_fused(parameters_[i].grad(), fused_slices_[i]);
  }
}

void GradientBuckets::reduce(const Bucket& bucket) {
  // Read the clock only for a traced step: the reduction is the hot path.
  const bool traced = timeline_ != nullptr && timeline_->active();
  const auto start = traced ? Clock::now() : Clock::time_point{};
  if (staging_) {
    staging_->allreduce_sum(fused_ + bucket.offset, bucket.count);
  } else {
    backend_.allreduce_sum(std::span<float>(fused_ + bucket.offset, bucket.count));
  }
  if (traced) {
    const bool communication_thread = std::this_thread::get_id() == thread_.get_id();
    timeline_->add(communication_thread ? Track::kCommunication : Track::kTraining, "reduce bucket", start,
                   Clock::now(), static_cast<int64_t>(bucket.count * sizeof(float)), &bucket - buckets_.data());
  }
}

// Caller holds mutex_.
void GradientBuckets::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
    buckets_[next_launch_].launched = true;
    queue_.push_back(next_launch_++);
  }
  work_ready_.notify_one();
}

void GradientBuckets::communication_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    const Bucket& bucket = buckets_[queue_.front()];
    queue_.pop_front();
    // After a failed reduction the ranks' collectives no longer match: run no more of them
    // (they could hang), just account for the bucket so finish_step() can report the error.
    const bool skip = failure_ != nullptr;
    lock.unlock();
    const auto start = Clock::now();
    std::exception_ptr failure;
    try {
      if (!skip) reduce(bucket);
    } catch (...) {
      failure = std::current_exception();
    }
    const double elapsed = seconds_since(start);
    lock.lock();
    comm_s_ += elapsed;
    if (failure && !failure_) failure_ = failure;
    ++completed_;
    work_done_.notify_all();
  }
}

BucketTiming GradientBuckets::finish_step() {
  // Both modes count packing, reduction and unpacking as communication, so that overlap_fraction
  // compares like with like; with overlap, the hooks' copies during backward count as well.
  if (!backend_.exchanges()) return {};  // one rank: the gradients are already the sums, in place
  if (!overlap_) {
    for (const auto& bucket : buckets_) {
      pack(bucket);
      reduce(bucket);
    }
    unpack();
    return {};
  }
  double overlapped_s = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Whatever the hooks did not deliver comes from .grad (zeros on a rank that only serves);
    // its packing is communication, as the hooks' copies are.
    const auto leftovers_start = Clock::now();
    for (auto& bucket : buckets_) {
      if (bucket.launched || bucket.pending == 0) continue;
      pack(bucket);
      bucket.pending = 0;
    }
    copy_s_ += seconds_since(leftovers_start);
    launch_ready_buckets();
    work_done_.wait(lock, [this] { return completed_ == buckets_.size(); });
    in_step_ = false;
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
    overlapped_s = comm_s_ + copy_s_;
  }
  // Unpacking is communication too.
  const auto unpack_start = Clock::now();
  unpack();
  return {overlapped_s + seconds_since(unpack_start)};
}

void GradientBuckets::unpack() {
  if (gradients_are_views()) {
    if (scale_ == 1.0F) return;
    if (!fused_tensor_.is_cpu()) {
      fused_tensor_.mul_(scale_);
      return;
    }
    const int64_t count = fused_tensor_.numel();
    for (int64_t i = 0; i < count; ++i) fused_[i] *= scale_;
    return;
  }
  for (std::size_t p = 0; p < parameters_.size(); ++p) {
    torch::Tensor grad = parameters_[p].mutable_grad();
    copy_scaled_from_fused(fused_slices_[p], scale_, grad);
  }
}

}  // namespace harness
