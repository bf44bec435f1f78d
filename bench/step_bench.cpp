// Microbenchmarks of one rank's share of a training step, without MPI: forward and backward
// passes of the Iris MLP (both engines) and of the CNN, and the SGD update, by batch size, on
// one thread. Run: build/bench/harness_step_bench
// Compare with the comm_time_s that `harness run` reports to see what synchronisation adds.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <numeric>

#include "harness/rank/allocator.h"
#include "harness/common/shuffle.h"
#include "harness/rank/trainer.h"
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

// One forward and backward pass of `settings`' workload on the first `state.range(0)` samples.
void forward_backward(benchmark::State& state, PointSettings settings) {
  at::set_num_threads(1);
  const auto workload = make_workload(settings, kNoCudaDevice);
  std::vector<int64_t> positions(static_cast<std::size_t>(state.range(0)));
  std::iota(positions.begin(), positions.end(), 0);
  auto parameters = workload->parameters();
  for (auto& parameter : parameters) parameter.mutable_grad() = torch::zeros_like(parameter);
  for (auto _ : state) {
    for (auto& parameter : parameters) parameter.mutable_grad().zero_();
    benchmark::DoNotOptimize(workload->forward_backward(positions));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel("items = samples");
}

void BM_IrisForwardBackward(benchmark::State& state) { forward_backward(state, PointSettings{}); }
BENCHMARK(BM_IrisForwardBackward)->Arg(4)->Arg(16)->Arg(64);

void BM_IrisBlasForwardBackward(benchmark::State& state) {
  PointSettings settings;
  settings.engine = "blas";
  forward_backward(state, settings);
}
BENCHMARK(BM_IrisBlasForwardBackward)->Arg(4)->Arg(16)->Arg(64);

void BM_MnistCnnForwardBackward(benchmark::State& state) {
  PointSettings settings;
  settings.workload = "mnist_cnn";
  settings.dataset_size = 256;
  settings.test_size = 10;
  forward_backward(state, settings);
}
BENCHMARK(BM_MnistCnnForwardBackward)->Arg(64)->Unit(benchmark::kMillisecond);

// What the trainer does around forward and backward on one rank, without MPI: zero the
// gradients, a batch at shuffled positions of 4096 images, and the SGD update. Compare with the
// step_time_s of a one-rank harness point to see what the rest of the step costs.
void BM_MnistCnnTrainingStep(benchmark::State& state) {
  at::set_num_threads(1);
  PointSettings settings;
  settings.workload = "mnist_cnn";
  settings.dataset_size = 4096;
  settings.test_size = 10;
  const auto workload = make_workload(settings, kNoCudaDevice);
  std::vector<int64_t> order(static_cast<std::size_t>(workload->train_size()));
  std::iota(order.begin(), order.end(), 0);
  deterministic_shuffle(order, 42, 1);
  auto parameters = workload->parameters();
  for (auto& parameter : parameters) parameter.mutable_grad() = torch::zeros_like(parameter);
  const auto batch = static_cast<std::size_t>(state.range(0));
  std::size_t offset = 0;
  for (auto _ : state) {
    if (offset + batch > order.size()) offset = 0;
    for (auto& parameter : parameters) parameter.mutable_grad().zero_();
    benchmark::DoNotOptimize(workload->forward_backward(
        std::span<const int64_t>(order.data() + offset, batch)));
    torch::NoGradGuard no_grad;
    for (auto& parameter : parameters) parameter.sub_(parameter.grad(), 0.05);
    offset += batch;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel("items = samples");
}
BENCHMARK(BM_MnistCnnTrainingStep)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_IrisSgdUpdate(benchmark::State& state) {
  at::set_num_threads(1);
  PointSettings settings;
  const auto workload = make_workload(settings, kNoCudaDevice);
  auto parameters = workload->parameters();
  for (auto& parameter : parameters) parameter.mutable_grad() = torch::ones_like(parameter);
  torch::NoGradGuard no_grad;
  for (auto _ : state) sgd_update(parameters, 1e-6F);
}
BENCHMARK(BM_IrisSgdUpdate);

}  // namespace
}  // namespace harness

int main(int argc, char** argv) {
  // As in a rank (harness/worker.cpp): otherwise the CNN's steps pay for page faults that ranks
  // do not see.
  harness::keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
