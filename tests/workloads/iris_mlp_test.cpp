// iris_mlp's two engines: from the same initial weights, LibTorch autograd and the hand-written
// cblas_sgemm network compute the same losses, gradients and evaluation.
#include "workloads/iris_mlp.h"

#include <gtest/gtest.h>

#include "workloads/factories.h"
#include "workloads/registry.h"

#include <torch/torch.h>

#include <numeric>

#include "harness/common/shuffle.h"
#include "workloads/workload.h"

namespace harness {
namespace {

std::unique_ptr<Workload> iris_with(const std::string& engine) {
  PointSettings settings;
  settings.engine = engine;
  settings.seed = 7;
  return make_iris_mlp(settings, kNoCudaDevice);
}

void sgd_step(Workload& workload, float lr) {
  torch::NoGradGuard no_grad;
  for (auto& parameter : workload.parameters()) parameter.sub_(parameter.grad(), lr);
}

void zero_gradients(Workload& workload) {
  for (auto& parameter : workload.parameters()) {
    if (!parameter.grad().defined()) parameter.mutable_grad() = torch::zeros_like(parameter);
    parameter.mutable_grad().zero_();
  }
}

TEST(IrisMlpEngines, BlasAndTorchGiveTheSameLossesOver100Steps) {
  auto torch_engine = iris_with("torch");
  auto blas_engine = iris_with("blas");
  ASSERT_EQ(torch_engine->train_size(), blas_engine->train_size());
  const auto torch_parameters = torch_engine->parameters();
  const auto blas_parameters = blas_engine->parameters();
  ASSERT_EQ(torch_parameters.size(), 6U);
  for (std::size_t i = 0; i < torch_parameters.size(); ++i) {
    ASSERT_TRUE(torch::equal(torch_parameters[i], blas_parameters[i])) << "initial parameter " << i;
  }

  std::vector<int64_t> order(static_cast<std::size_t>(torch_engine->train_size()));
  constexpr int64_t kBatch = 8;
  constexpr float kLearningRate = 2.0F;  // large, so the 100 steps move the weights a lot
  for (int step = 0; step < 100; ++step) {
    const auto steps_per_epoch = static_cast<int64_t>(order.size()) / kBatch;
    if (step % steps_per_epoch == 0) {
      std::iota(order.begin(), order.end(), 0);
      deterministic_shuffle(order, 7, static_cast<uint64_t>(step / steps_per_epoch + 1));
    }
    const std::span<const int64_t> positions(order.data() + (step % steps_per_epoch) * kBatch, kBatch);
    zero_gradients(*torch_engine);
    zero_gradients(*blas_engine);
    const double torch_loss = torch_engine->forward_backward(positions);
    const double blas_loss = blas_engine->forward_backward(positions);
    ASSERT_NEAR(blas_loss, torch_loss, 1e-4) << "step " << step;
    for (std::size_t i = 0; i < torch_parameters.size(); ++i) {
      ASSERT_TRUE(torch::allclose(blas_parameters[i].grad(), torch_parameters[i].grad(), 1e-4, 1e-6))
          << "gradient " << i << " at step " << step;
    }
    sgd_step(*torch_engine, kLearningRate);
    sgd_step(*blas_engine, kLearningRate);
  }
  const Evaluation torch_evaluation = torch_engine->evaluate();
  const Evaluation blas_evaluation = blas_engine->evaluate();
  EXPECT_NEAR(blas_evaluation.loss, torch_evaluation.loss, 1e-4);
  EXPECT_EQ(blas_evaluation.accuracy, torch_evaluation.accuracy);
  EXPECT_EQ(blas_evaluation.samples, 30);
}

// Evaluating is a forward pass: it needs no gradients, before any step as after.
TEST(IrisMlpEngines, BothEvaluateBeforeAnyGradientExists) {
  for (const char* engine : {"torch", "blas"}) {
    const Evaluation evaluation = iris_with(engine)->evaluate();
    EXPECT_EQ(evaluation.samples, 30) << engine;
    EXPECT_GT(evaluation.loss, 0) << engine;
  }
}

}  // namespace
}  // namespace harness
