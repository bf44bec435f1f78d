// Microbenchmarks of one rank's share of a training step, without MPI: the Iris MLP's forward and
// backward pass and its SGD update, by batch size. Run: build/bench/harness_step_bench
// Compare with the comm_time_s that `harness run` reports to see what synchronisation adds.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <numeric>

#include "workloads/registry.h"
#include "workloads/workload.h"

namespace harness {
namespace {

void BM_IrisForwardBackward(benchmark::State& state) {
  at::set_num_threads(1);
  PointSettings settings;
  const auto workload = find_workload("iris_mlp").make(settings);
  std::vector<int64_t> positions(static_cast<std::size_t>(state.range(0)));
  std::iota(positions.begin(), positions.end(), 0);
  auto parameters = workload->parameters();
  for (auto _ : state) {
    for (auto& parameter : parameters) {
      if (parameter.grad().defined()) parameter.mutable_grad().zero_();
    }
    benchmark::DoNotOptimize(workload->forward_backward(positions));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel("items = samples");
}
BENCHMARK(BM_IrisForwardBackward)->Arg(4)->Arg(16)->Arg(64);

void BM_IrisSgdUpdate(benchmark::State& state) {
  at::set_num_threads(1);
  PointSettings settings;
  const auto workload = find_workload("iris_mlp").make(settings);
  auto parameters = workload->parameters();
  for (auto& parameter : parameters) parameter.mutable_grad() = torch::ones_like(parameter);
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    for (auto& parameter : parameters) parameter.sub_(parameter.grad(), 1e-6);
  }
}
BENCHMARK(BM_IrisSgdUpdate);

}  // namespace
}  // namespace harness

BENCHMARK_MAIN();
