// A GradientSync that wraps another and forwards all but allreduce_sum to it: the base of the
// wrappers that add something around each call (an injected delay, the rank's progress marks).
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include "backends/gradient_sync.h"

namespace harness {

class ForwardingSync : public GradientSync {
 public:
  explicit ForwardingSync(std::unique_ptr<GradientSync> backend) : backend_(std::move(backend)) {}

  std::string_view name() const override { return backend_->name(); }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override { return backend_->allocate_buffer(count); }
  bool exchanges() const override { return backend_->exchanges(); }
  int host_threads() const override { return backend_->host_threads(); }

 protected:
  GradientSync& backend() { return *backend_; }

 private:
  std::unique_ptr<GradientSync> backend_;
};

}  // namespace harness
