// Runs on every rank under mpirun (1 to 4 ranks).
#include "harness/rank/gradient_buckets.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/registry.h"
#include "backends/gloo_allreduce.h"
#include "backends/mpi_allreduce.h"
#include "tests/mpi_world.h"

namespace harness {
namespace {

// A convolution whose weight is stored channels-last (as mnist_cnn's are) and a bias.
struct ChannelsLastLayer {
  torch::Tensor weight;
  torch::Tensor bias;

  ChannelsLastLayer() {
    torch::manual_seed(7);  // the same parameters on every rank
    weight = torch::randn({4, 3, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
    weight.requires_grad_();
    bias = torch::randn({4}).requires_grad_();
    for (auto* parameter : {&weight, &bias}) {
      parameter->mutable_grad() = torch::zeros_like(*parameter, torch::MemoryFormat::Preserve);
    }
  }

  // Backward on the batch that rank `rank` trains on: gradients accumulate into .grad.
  void backward_on(int rank) {
    const auto x = torch::arange(2 * 3 * 6 * 6, torch::kFloat32)
                       .reshape({2, 3, 6, 6})
                       .mul(0.01 * (rank + 1))
                       .sin()
                       .contiguous(torch::MemoryFormat::ChannelsLast);
    torch::conv2d(x, weight, bias).pow(2).mean().backward();
  }

  // Both gradients in logical (NCHW) order.
  torch::Tensor flat_gradients() const {
    return torch::cat({weight.grad().contiguous().flatten(), bias.grad().flatten()});
  }
};

using BackendAndOverlap = std::tuple<std::string, bool>;

class ChannelsLastGradients : public ::testing::TestWithParam<BackendAndOverlap> {};

TEST_P(ChannelsLastGradients, AreAveragedAndKeepTheParametersLayout) {
  const auto& [backend_name, overlap] = GetParam();
  if (backend_name == "gloo" && !gloo_available()) GTEST_SKIP() << "built without libgloo-dev";
  if (refuses_across_nodes(backend_name)) return;
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ChannelsLastLayer layer;
  const auto backend = make_gradient_sync(backend_name, MPI_COMM_WORLD);
  GradientBuckets buckets({layer.weight, layer.bias}, *backend, 25, overlap, size);

  // Every rank's gradient, summed here without communication (a backward pass outside a step
  // exchanges nothing), then averaged.
  buckets.zero_gradients();
  for (int r = 0; r < size; ++r) layer.backward_on(r);
  const torch::Tensor expected = layer.flat_gradients() / size;

  // Two steps: the second starts from the buffers the first one's reduction left.
  for (int step = 0; step < 2; ++step) {
    buckets.zero_gradients();
    buckets.begin_step();
    layer.backward_on(rank);
    buckets.finish_step();
  }

  EXPECT_TRUE(layer.weight.grad().is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_EQ(layer.weight.grad().strides(), layer.weight.strides());
  const torch::Tensor averaged = layer.flat_gradients();
  ASSERT_EQ(averaged.numel(), expected.numel());
  for (int64_t i = 0; i < averaged.numel(); ++i) {
    const float want = expected[i].item<float>();
    ASSERT_NEAR(averaged[i].item<float>(), want, 1e-6 + 1e-5 * std::abs(want)) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Buckets, ChannelsLastGradients,
                         ::testing::Combine(::testing::ValuesIn(host_memory_backend_names()),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<BackendAndOverlap>& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) ? "_overlap" : "_blocking");
                         });

// A backend that offers memory of its own, as `shm` does, and records what it reduces.
class BackendWithMemory : public GradientSync {
 public:
  std::string_view name() const override { return "with_memory"; }
  std::shared_ptr<float> allocate_buffer(std::size_t count) override {
    auto block = std::make_shared<std::vector<float>>(count);
    memory_ = std::shared_ptr<float>(block, block->data());
    offered_ = memory_;
    count_ = count;
    return std::exchange(memory_, nullptr);
  }
  void allreduce_sum(std::span<float> buffer) override {
    const auto memory = offered_.lock();
    spans_inside_ += memory && buffer.data() >= memory.get() &&
                     buffer.data() + buffer.size() <= memory.get() + count_;
    ++spans_;
    mpi_.allreduce_sum(buffer);
  }

  std::weak_ptr<float> offered_;
  std::size_t count_ = 0;
  int spans_ = 0;
  int spans_inside_ = 0;

 private:
  std::shared_ptr<float> memory_;
  MpiAllreduce mpi_{MPI_COMM_WORLD};
};

class BackendMemory : public ::testing::TestWithParam<bool> {};

TEST_P(BackendMemory, HoldsTheBucketsAndLivesAsLongAsTheGradients) {
  const bool overlap = GetParam();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ChannelsLastLayer layer;
  BackendWithMemory backend;
  {
    GradientBuckets buckets({layer.weight, layer.bias}, backend, 25, overlap, size);
    EXPECT_EQ(backend.count_, static_cast<std::size_t>(layer.weight.numel() + layer.bias.numel()));
    buckets.zero_gradients();
    buckets.begin_step();
    layer.backward_on(0);
    buckets.finish_step();
    EXPECT_GT(backend.spans_, 0);
    EXPECT_EQ(backend.spans_inside_, backend.spans_) << "a bucket was reduced outside it";
    if (!overlap) {  // the gradients are views of the buckets
      const auto* first = backend.offered_.lock().get();
      EXPECT_EQ(layer.bias.grad().data_ptr<float>(), first);
    }
  }
  // The buckets are gone; without overlap the .grad views still use the memory.
  EXPECT_EQ(backend.offered_.expired(), overlap);
  layer.weight.mutable_grad() = torch::Tensor();
  layer.bias.mutable_grad() = torch::Tensor();
  EXPECT_TRUE(backend.offered_.expired());
}

INSTANTIATE_TEST_SUITE_P(Buckets, BackendMemory, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "overlap" : "blocking");
                         });

// What make_gradient_sync gives a one-rank point, whatever the backend: nothing to exchange.
class NothingToExchangeProbe : public GradientSync {
 public:
  std::string_view name() const override { return "one_rank"; }
  void allreduce_sum(std::span<float> /*buffer*/) override { ++calls_; }
  bool exchanges() const override { return false; }

  int calls_ = 0;
};

class OneRank : public ::testing::TestWithParam<bool> {};

TEST_P(OneRank, AStepCopiesAndReducesNothingWithOrWithoutOverlap) {
  const bool overlap = GetParam();
  ChannelsLastLayer layer;
  NothingToExchangeProbe backend;
  GradientBuckets buckets({layer.weight, layer.bias}, backend, 25, overlap, 1);
  // Autograd accumulates straight into the fused buffer (no hooks copying into it), even when
  // overlap was asked for: there is nothing to overlap.
  const float* weight_gradient = layer.weight.grad().data_ptr<float>();
  for (int step = 0; step < 2; ++step) {
    buckets.zero_gradients();
    buckets.begin_step();
    layer.backward_on(0);
    buckets.finish_step();
  }
  EXPECT_EQ(backend.calls_, 0);
  EXPECT_EQ(buckets.hook_launches(), 0U);
  EXPECT_EQ(layer.weight.grad().data_ptr<float>(), weight_gradient);

  ChannelsLastLayer reference;  // the same parameters: its own gradient, untouched by any buckets
  reference.backward_on(0);
  EXPECT_TRUE(torch::equal(layer.flat_gradients(), reference.flat_gradients()));
}

INSTANTIATE_TEST_SUITE_P(Buckets, OneRank, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "overlap" : "blocking");
                         });

}  // namespace
}  // namespace harness
