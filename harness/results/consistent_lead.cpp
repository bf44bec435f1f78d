#include "harness/results/consistent_lead.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/students_t.hpp>

#include "harness/results/statistics.h"

namespace harness {

double standing_in_step(const std::vector<double>& compute_s, std::size_t rank) {
  if (compute_s.size() < 2 || rank >= compute_s.size()) return 0;
  int below = 0;
  int above = 0;
  for (const double other : compute_s) {
    below += other < compute_s[rank] ? 1 : 0;
    above += other > compute_s[rank] ? 1 : 0;
  }
  return static_cast<double>(below - above) / static_cast<double>(compute_s.size() - 1);
}

namespace {

// One-sided p of a mean of `values` this far above 0 (Student t, n - 1 degrees of freedom).
double upper_p_value(const std::vector<double>& values) {
  const auto n = static_cast<double>(values.size());
  if (values.size() < 2) return 1;
  double mean = 0;
  for (const double value : values) mean += value;
  mean /= n;
  double squares = 0;
  for (const double value : values) squares += (value - mean) * (value - mean);
  const double sd = std::sqrt(squares / (n - 1));
  // Rounding leaves a spread of ~1e-17 where every block's standing is the same.
  if (sd < 1e-12) return mean > 1e-12 ? 0 : 1;
  const boost::math::students_t distribution(n - 1);
  return boost::math::cdf(boost::math::complement(distribution, mean / (sd / std::sqrt(n))));
}

// How many steps the groups' standings take to forget themselves: the integrated
// autocorrelation time 1 + 2 (r1 + r2 + ...), r_k the lag-k autocorrelation pooled over the groups,
// each series about its own mean (a group steadily slower is not noise), summed while pairs of
// terms stay positive (Geyer's initial positive sequence, as MCMC's effective sample sizes are
// estimated). n steps of such noise hold n / tau independent ones.
double autocorrelation_time(const std::vector<std::vector<double>>& series) {
  std::vector<std::vector<double>> centred;
  std::size_t length = 0;
  double variance = 0;
  for (const std::vector<double>& x : series) {
    if (x.size() < 3) continue;
    double mean = 0;
    for (const double value : x) mean += value / static_cast<double>(x.size());
    std::vector<double> c;
    double squares = 0;
    for (const double value : x) {
      c.push_back(value - mean);
      squares += (value - mean) * (value - mean);
    }
    // A standing that never moves (the slowest in every step) has no noise to correlate; its
    // rounding errors (~1e-17) would read as a correlation of 1.
    if (squares < 1e-12 * static_cast<double>(x.size())) continue;
    variance += squares;
    length = std::max(length, c.size());
    centred.push_back(std::move(c));
  }
  if (variance <= 0) return 1;
  const auto lag = [&](std::size_t k) {
    double sum = 0;
    for (const std::vector<double>& c : centred) {
      for (std::size_t t = 0; t + k < c.size(); ++t) sum += c[t] * c[t + k];
    }
    return sum / variance;
  };
  double tau = 1;
  double previous_pair = 2;  // the sequence of pairs is kept from rising (Geyer's monotone one)
  for (std::size_t m = 0; 2 * m + 2 < length; ++m) {
    // Pairs (r_{2m+1} + r_{2m+2}); the lag-0 term is the 1 above.
    const double pair = std::min(lag(2 * m + 1) + lag(2 * m + 2), previous_pair);
    if (pair <= 0) break;
    tau += 2 * pair;
    previous_pair = pair;
  }
  return tau;
}

}  // namespace

std::vector<Consistency> consistency_of(const std::vector<RunCompute>& runs, int groups) {
  const auto count = static_cast<std::size_t>(std::max(groups, 0));
  std::vector<std::vector<double>> block_means(count);
  std::vector<std::vector<double>> excess(count);
  std::vector<std::vector<double>> compute(count);
  for (const RunCompute& run : runs) {
    const std::size_t ranks = run.group_of.size();
    std::vector<int> members(count, 0);
    for (const int group : run.group_of) {
      if (group >= 0 && static_cast<std::size_t>(group) < count) ++members[static_cast<std::size_t>(group)];
    }
    std::vector<const std::vector<double>*> steps;
    for (const std::vector<double>& row : run.compute_s) {
      if (row.size() == ranks) steps.push_back(&row);
    }
    // Each group's standing and excess in each step, where it has others to be compared with.
    std::vector<std::vector<double>> standings(count);
    for (std::size_t g = 0; g < count; ++g) {
      if (members[g] == 0 || static_cast<std::size_t>(members[g]) == ranks) continue;
      for (const std::vector<double>* row : steps) {
        double standing = 0;
        double mine = 0;
        std::vector<double> others;
        for (std::size_t r = 0; r < ranks; ++r) {
          if (static_cast<std::size_t>(run.group_of[r]) == g) {
            standing += standing_in_step(*row, r) / members[g];
            mine += (*row)[r] / members[g];
            compute[g].push_back((*row)[r]);
          } else {
            others.push_back((*row)[r]);
          }
        }
        standings[g].push_back(standing);
        excess[g].push_back(mine - median_of(others));
      }
    }
    // Blocks as long as this run's noise lasts, of equal size but for one step.
    const auto block = static_cast<std::size_t>(std::ceil(kBlockSteps * autocorrelation_time(standings) - 1e-9));
    const std::size_t blocks = std::max<std::size_t>(1, steps.size() / block);
    for (std::size_t g = 0; g < count; ++g) {
      if (standings[g].empty()) continue;
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t begin = b * steps.size() / blocks;
        const std::size_t end = (b + 1) * steps.size() / blocks;
        double sum = 0;
        for (std::size_t s = begin; s < end; ++s) sum += standings[g][s];
        block_means[g].push_back(sum / static_cast<double>(end - begin));
      }
    }
  }
  std::vector<Consistency> result(count);
  for (std::size_t g = 0; g < count; ++g) {
    Consistency& c = result[g];
    c.blocks = static_cast<int>(block_means[g].size());
    for (const double mean : block_means[g]) c.standing += mean / c.blocks;
    c.p_value = upper_p_value(block_means[g]);
    c.excess_s = median_of(excess[g]);
    c.compute_s = median_of(compute[g]);
  }
  return result;
}

}  // namespace harness
