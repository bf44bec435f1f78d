// A GradientSync that wraps another and forwards everything to it: the base of the wrappers that
// add something around each collective call (an injected delay, the rank's progress marks), which
// override before_call and after_call.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/gradient_sync.h"

namespace harness {

class ForwardingSync : public GradientSync {
 public:
  explicit ForwardingSync(std::unique_ptr<GradientSync> backend) : backend_(std::move(backend)) {}

  std::string_view name() const override { return backend_->name(); }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override { return backend_->allocate_buffer(count); }
  bool exchanges() const override { return backend_->exchanges(); }
  int host_threads() const override { return backend_->host_threads(); }
  void allreduce_sum(std::span<float> buffer) final {
    before_call();
    backend_->allreduce_sum(buffer);
    after_call();
  }
  bool scatters_sums() const final { return backend_->scatters_sums(); }
  std::span<std::byte> scattered_memory(const float* buffer) final { return backend_->scattered_memory(buffer); }
  std::vector<std::span<const float>> allreduce_sum_scattered(std::span<float> buffer) final {
    before_call();
    auto pieces = backend_->allreduce_sum_scattered(buffer);
    after_call();
    return pieces;
  }
  // Not a reduction: no injected delay, no call of its own in the progress marks.
  void end_scattered() final { backend_->end_scattered(); }
  StagingLeverSettings staging_lever_settings() const final { return backend_->staging_lever_settings(); }
  void use_host_threads(int threads) final { backend_->use_host_threads(threads); }

 protected:
  // Around every reduction of the wrapped backend, on the calling thread; a call that throws
  // skips after_call.
  virtual void before_call() {}
  virtual void after_call() {}

 private:
  std::unique_ptr<GradientSync> backend_;
};

}  // namespace harness
