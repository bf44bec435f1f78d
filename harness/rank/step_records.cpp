#include "harness/rank/step_records.h"

#include <mpi.h>

#include <algorithm>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

std::vector<double> gather_to_root(std::span<const double> local,
                                   const Communicator& communicator) {
  std::vector<double> all(communicator.rank() == 0 ? local.size() * communicator.size() : 0);
  check_mpi(MPI_Gather(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(),
                       static_cast<int>(local.size()), MPI_DOUBLE, 0, communicator.handle()),
            "MPI_Gather(step times)");
  return all;
}

}  // namespace

StepSeries gather_step_series(const StepTimes& local, const std::vector<bool>& training,
                              const Communicator& communicator) {
  return gather_step_series(local, 0, training, communicator);
}

StepSeries gather_step_series(const StepTimes& local, std::size_t first_step,
                              const std::vector<bool>& training, const Communicator& communicator) {
  if (first_step > local.step_s.size()) {
    throw Error(fmt::format("step records: gathering from step {} of {}", first_step,
                            local.step_s.size()));
  }
  const auto from = [first_step](const std::vector<double>& times) {
    return std::span<const double>(times).subspan(first_step);
  };
  const auto step_s = gather_to_root(from(local.step_s), communicator);
  const auto compute_s = gather_to_root(from(local.compute_s), communicator);
  const auto comm_s = gather_to_root(from(local.comm_s), communicator);
  const auto exposed_s = gather_to_root(from(local.exposed_s), communicator);
  StepSeries series;
  if (communicator.rank() != 0) return series;
  const std::size_t steps = local.step_s.size() - first_step;
  std::vector<double> wait_s;
  for (std::size_t step = 0; step < steps; ++step) {
    std::size_t worst = step;  // rank 0's entry
    double slowest_compute = 0;
    for (int r = 0; r < communicator.size(); ++r) {
      const std::size_t candidate = r * steps + step;
      if (step_s[candidate] > step_s[worst]) worst = candidate;
      if (training[r]) slowest_compute = std::max(slowest_compute, compute_s[candidate]);
    }
    series.step_s.push_back(step_s[worst]);
    series.compute_s.push_back(compute_s[worst]);
    series.comm_s.push_back(comm_s[worst]);
    series.exposed_comm_s.push_back(exposed_s[worst]);
    // The exchange cannot finish before the slowest training rank joins it.
    wait_s.push_back(std::clamp(slowest_compute - compute_s[worst], 0.0, exposed_s[worst]));
  }
  series.wait_s = std::move(wait_s);
  series.imbalance_s = load_imbalance_per_step(compute_s, steps, training);
  return series;
}

void append_steps(StepSeries& series, const StepSeries& more) {
  const auto append = [](std::vector<double>& to, const std::vector<double>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  append(series.step_s, more.step_s);
  append(series.compute_s, more.compute_s);
  append(series.comm_s, more.comm_s);
  append(series.exposed_comm_s, more.exposed_comm_s);
  // A gathered series always has both; an empty one (before the first slice) gets them here.
  for (auto [to, from] : {std::pair{&series.wait_s, &more.wait_s},
                          std::pair{&series.imbalance_s, &more.imbalance_s}}) {
    if (!from->has_value()) continue;
    if (!to->has_value()) to->emplace();
    append(**to, **from);
  }
}

std::vector<double> load_imbalance_per_step(const std::vector<double>& compute_s,
                                            std::size_t steps, const std::vector<bool>& training) {
  if (compute_s.size() != steps * training.size()) {
    throw Error(fmt::format("load imbalance: {} compute times for {} steps of {} ranks",
                            compute_s.size(), steps, training.size()));
  }
  const auto ranks = static_cast<std::size_t>(std::count(training.begin(), training.end(), true));
  std::vector<double> imbalance(steps, 0.0);
  if (ranks < 2) return imbalance;
  for (std::size_t step = 0; step < steps; ++step) {
    double slowest = 0;
    double sum = 0;
    for (std::size_t r = 0; r < training.size(); ++r) {
      if (!training[r]) continue;
      const double compute = compute_s[r * steps + step];
      slowest = std::max(slowest, compute);
      sum += compute;
    }
    imbalance[step] = slowest - sum / static_cast<double>(ranks);
  }
  return imbalance;
}

}  // namespace harness
