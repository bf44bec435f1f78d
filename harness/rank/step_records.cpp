#include "harness/rank/step_records.h"

#include <mpi.h>

#include <algorithm>
#include <optional>
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

StepSeries mean_training_rank_steps(const StepTimes& all, std::size_t steps, const std::vector<bool>& training) {
  const bool held = !all.held_s.empty();
  if (all.step_s.size() != steps * training.size() || all.compute_s.size() != all.step_s.size() ||
      all.comm_s.size() != all.step_s.size() || all.exposed_s.size() != all.step_s.size() ||
      (held && all.held_s.size() != all.step_s.size())) {
    throw Error(fmt::format("step records: {} times for {} steps of {} ranks", all.step_s.size(), steps,
                            training.size()));
  }
  // A rank that only serves (ps's rank 0) computes nothing, and its step is the training ranks'
  // compute spent waiting: it never counts in the step (unless no rank trains).
  const bool any_training = std::find(training.begin(), training.end(), true) != training.end();
  std::vector<std::size_t> standing;
  for (std::size_t r = 0; r < training.size(); ++r) {
    if (training[r] || !any_training) standing.push_back(r);
  }
  StepSeries series;
  std::vector<double> wait_s;
  if (standing.empty()) {
    series.wait_s = std::move(wait_s);
    return series;
  }
  const auto count = static_cast<double>(standing.size());
  for (std::size_t step = 0; step < steps; ++step) {
    double slowest_compute = 0;
    for (const std::size_t r : standing) slowest_compute = std::max(slowest_compute, all.compute_s[r * steps + step]);
    double step_sum = 0, compute_sum = 0, comm_sum = 0, exposed_sum = 0, wait_sum = 0;
    for (const std::size_t r : standing) {
      const std::size_t at = r * steps + step;
      step_sum += all.step_s[at];
      compute_sum += all.compute_s[at];
      comm_sum += all.comm_s[at];
      exposed_sum += all.exposed_s[at];
      // The exchange cannot finish before the slowest training rank joins it; under a scheme
      // that holds a rank back by its own rule (async_ps's staleness bound), that is its wait.
      const double wait = held ? all.held_s[at] : slowest_compute - all.compute_s[at];
      wait_sum += std::clamp(wait, 0.0, all.exposed_s[at]);
    }
    series.step_s.push_back(step_sum / count);
    series.compute_s.push_back(compute_sum / count);
    series.comm_s.push_back(comm_sum / count);
    series.exposed_comm_s.push_back(exposed_sum / count);
    wait_s.push_back(wait_sum / count);
  }
  series.wait_s = std::move(wait_s);
  return series;
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
  // Every rank runs the same scheme: all have held times or none.
  const auto held_s = local.held_s.empty() ? std::vector<double>() : gather_to_root(from(local.held_s), communicator);
  if (communicator.rank() != 0) return {};
  const std::size_t steps = local.step_s.size() - first_step;
  StepSeries series = mean_training_rank_steps(
      StepTimes{.compute_s = compute_s, .comm_s = comm_s, .exposed_s = exposed_s, .step_s = step_s, .held_s = held_s},
      steps, training);
  // Under a scheme that holds ranks back by its own rule, a rank waits for a slower one only
  // when held (async_ps's workers never wait for each other's compute otherwise).
  series.imbalance_s = held_s.empty() ? load_imbalance_per_step(compute_s, steps, training) : *series.wait_s;
  SlowestRanks slowest = slowest_rank_per_step(compute_s, steps, training);
  series.slowest_rank = std::move(slowest.rank);
  series.slowest_lead_s = std::move(slowest.lead_s);
  series.rank_compute = sample_rank_compute(compute_s, steps, first_step, training.size());
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
                          std::pair{&series.imbalance_s, &more.imbalance_s},
                          std::pair{&series.slowest_lead_s, &more.slowest_lead_s}}) {
    if (!from->has_value()) continue;
    if (!to->has_value()) to->emplace();
    append(**to, **from);
  }
  if (more.slowest_rank) {
    if (!series.slowest_rank) series.slowest_rank.emplace();
    series.slowest_rank->insert(series.slowest_rank->end(), more.slowest_rank->begin(), more.slowest_rank->end());
  }
  if (more.rank_compute) {
    if (!series.rank_compute) {
      series.rank_compute = more.rank_compute;
    } else {
      // Both strides are powers of two: the larger one's multiples are in both samples.
      RankComputeSample& sample = *series.rank_compute;
      sample.stride = std::max(sample.stride, more.rank_compute->stride);
      sample.steps.insert(sample.steps.end(), more.rank_compute->steps.begin(), more.rank_compute->steps.end());
      sample.compute_s.insert(sample.compute_s.end(), more.rank_compute->compute_s.begin(),
                              more.rank_compute->compute_s.end());
      thin_rank_sample(sample);
    }
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

SlowestRanks slowest_rank_per_step(const std::vector<double>& compute_s, std::size_t steps,
                                   const std::vector<bool>& training) {
  if (compute_s.size() != steps * training.size()) {
    throw Error(fmt::format("slowest rank: {} compute times for {} steps of {} ranks", compute_s.size(),
                            steps, training.size()));
  }
  SlowestRanks slowest;
  std::vector<double> computes;
  for (std::size_t step = 0; step < steps; ++step) {
    computes.clear();
    int rank = -1;
    for (std::size_t r = 0; r < training.size(); ++r) {
      if (!training[r]) continue;
      const double compute = compute_s[r * steps + step];
      if (rank < 0 || compute > compute_s[static_cast<std::size_t>(rank) * steps + step]) rank = static_cast<int>(r);
      computes.push_back(compute);
    }
    if (rank < 0) throw Error("slowest rank: no rank trains");
    std::sort(computes.begin(), computes.end());
    // Against the others only: with 2 ranks a median that counts the slowest would halve its lead.
    const double slowest_compute = computes.back();
    computes.pop_back();
    const std::size_t middle = computes.size() / 2;
    const double median = computes.empty()                ? slowest_compute
                          : computes.size() % 2 == 1 ? computes[middle]
                                                     : (computes[middle - 1] + computes[middle]) / 2;
    slowest.rank.push_back(rank);
    slowest.lead_s.push_back(slowest_compute - median);
  }
  return slowest;
}

RankComputeSample sample_rank_compute(const std::vector<double>& compute_s, std::size_t steps,
                                      std::size_t first_step, std::size_t ranks) {
  if (compute_s.size() != steps * ranks) {
    throw Error(fmt::format("rank sample: {} compute times for {} steps of {} ranks", compute_s.size(), steps, ranks));
  }
  // The multiples of `stride` in [first_step, first_step + steps).
  const auto multiples = [first_step, steps](int64_t stride) {
    const auto first = static_cast<int64_t>(first_step);
    const auto end = first + static_cast<int64_t>(steps);
    return (end + stride - 1) / stride - (first + stride - 1) / stride;
  };
  RankComputeSample sample;
  while (multiples(sample.stride) > static_cast<int64_t>(rank_sample_limit(ranks))) sample.stride *= 2;
  for (std::size_t step = 0; step < steps; ++step) {
    const auto index = static_cast<int64_t>(first_step + step);
    if (index % sample.stride != 0) continue;
    sample.steps.push_back(index);
    std::vector<double>& row = sample.compute_s.emplace_back(ranks);
    for (std::size_t r = 0; r < ranks; ++r) row[r] = compute_s[r * steps + step];
  }
  return sample;
}

}  // namespace harness
