#include "harness/results/stragglers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "harness/results/statistics.h"

namespace harness {
namespace {

// What the pooled steps say of one rank or host.
struct Tally {
  Straggling entry;
  std::vector<double> leads_s;    // in the steps where it was the slowest
  double wait_s = 0;              // their imbalances, summed
  std::vector<double> compute_s;  // sampled
  // A rank: the hosts it ran on in the steps where it was the slowest (repeats may land on other
  // nodes). A host: its training ranks times the steps of each run, to weigh chance by.
  std::map<std::string, int64_t> slowest_on;
  double rank_steps = 0;
};

void finish_tally(Tally& tally, int64_t steps) {
  Straggling& entry = tally.entry;
  entry.slowest_steps = static_cast<int64_t>(tally.leads_s.size());
  entry.share = steps > 0 ? static_cast<double>(entry.slowest_steps) / static_cast<double>(steps) : 0;
  std::sort(tally.leads_s.begin(), tally.leads_s.end());
  entry.lead_median_s = percentile(tally.leads_s, 0.5);
  entry.lead_p95_s = percentile(tally.leads_s, 0.95);
  entry.wait_per_step_s = steps > 0 ? tally.wait_s / static_cast<double>(steps) : 0;
  std::sort(tally.compute_s.begin(), tally.compute_s.end());
  entry.compute_p05_s = percentile(tally.compute_s, 0.05);
  entry.compute_median_s = percentile(tally.compute_s, 0.5);
  entry.compute_p95_s = percentile(tally.compute_s, 0.95);
  entry.compute_samples = static_cast<int64_t>(tally.compute_s.size());
}

// The entry slowest most often (the first on a tie: the lowest rank, the host of the lowest rank).
const Straggling* most_often_slowest(const std::vector<Straggling>& entries) {
  const Straggling* best = nullptr;
  for (const Straggling& entry : entries) {
    if (best == nullptr || entry.slowest_steps > best->slowest_steps) best = &entry;
  }
  return best;
}

// Every rank's and host's tally over the runs of one configuration.
class RunTallies {
 public:
  // Adds one run's steps; a run without the per-step slowest rank, or with fewer than two training
  // ranks, adds nothing.
  void add(const Measurements& run) {
    if (!run.train) return;
    const StepSeries& steps = run.train->steps;
    if (!steps.slowest_rank || !steps.slowest_lead_s || run.train->training_ranks < 2) return;
    const int world = run.world_size;
    const int first_training = world - run.train->training_ranks;  // 1 where rank 0 only serves
    const std::vector<std::size_t> host_index = meet_ranks(run, first_training);
    training_ranks_ = std::max(training_ranks_, run.train->training_ranks);
    ++runs_;
    const std::size_t count = steps.slowest_rank->size();
    for (int r = first_training; r < world; ++r) hosts_[host_index[static_cast<std::size_t>(r)]].rank_steps += count;
    rank_steps_ += static_cast<double>(world - first_training) * static_cast<double>(count);
    for (std::size_t s = 0; s < count; ++s) {
      const int rank = (*steps.slowest_rank)[s];
      if (rank < first_training || rank >= world) continue;  // the reader refuses these
      const double lead = (*steps.slowest_lead_s)[s];
      const double wait = steps.imbalance_s ? std::max(0.0, (*steps.imbalance_s)[s]) : 0.0;
      Tally& host = hosts_[host_index[static_cast<std::size_t>(rank)]];
      for (Tally* tally : {&ranks_[static_cast<std::size_t>(rank)], &host}) {
        tally->leads_s.push_back(lead);
        tally->wait_s += wait;
      }
      ++ranks_[static_cast<std::size_t>(rank)].slowest_on[host.entry.host];
    }
    steps_ += static_cast<int64_t>(count);
    if (!steps.rank_compute) return;
    for (const std::vector<double>& row : steps.rank_compute->compute_s) {
      for (int r = first_training; r < world && static_cast<std::size_t>(r) < row.size(); ++r) {
        ranks_[static_cast<std::size_t>(r)].compute_s.push_back(row[static_cast<std::size_t>(r)]);
        all_compute_s_.push_back(row[static_cast<std::size_t>(r)]);
      }
    }
  }

  // The tallies as entries; `measured` false when no run added steps.
  Stragglers finish() {
    Stragglers result;
    result.runs = runs_;
    result.steps = steps_;
    if (runs_ == 0 || steps_ == 0) return result;
    result.measured = true;
    for (Tally& tally : ranks_) {
      if (tally.entry.rank < 0) continue;  // a rank that only serves
      // Its host: where it was the slowest most often (else where it first ran).
      int64_t most = 0;
      for (const auto& [host, steps] : tally.slowest_on) {
        if (steps > most) std::tie(most, tally.entry.host) = std::pair(steps, host);
      }
      finish_tally(tally, steps_);
      result.ranks.push_back(tally.entry);
    }
    for (Tally& tally : hosts_) {
      finish_tally(tally, steps_);
      tally.entry.chance = rank_steps_ > 0 ? tally.rank_steps / rank_steps_ : 0;
      result.hosts.push_back(tally.entry);
    }
    result.straggler = *most_often_slowest(result.ranks);
    result.median_compute_s = median_of(all_compute_s_);
    return result;
  }

  int training_ranks() const { return training_ranks_; }

 private:
  // Makes a tally for each training rank of `run` and each host new to them; the index of each
  // rank's host.
  std::vector<std::size_t> meet_ranks(const Measurements& run, int first_training) {
    const int world = run.world_size;
    const auto host_of = [&run](int rank) {
      return static_cast<std::size_t>(rank) < run.hosts.size() ? run.hosts[static_cast<std::size_t>(rank)]
                                                               : std::string();
    };
    if (ranks_.size() < static_cast<std::size_t>(world)) ranks_.resize(static_cast<std::size_t>(world));
    std::vector<std::size_t> host_index(static_cast<std::size_t>(world));
    std::map<std::size_t, int> ranks_here;  // this run's training ranks on each host
    for (int r = first_training; r < world; ++r) {
      Tally& tally = ranks_[static_cast<std::size_t>(r)];
      if (tally.entry.rank < 0) tally.entry = Straggling{r, host_of(r)};
      const std::string host = host_of(r);
      auto found = std::find_if(hosts_.begin(), hosts_.end(), [&](const Tally& t) { return t.entry.host == host; });
      if (found == hosts_.end()) {
        found = hosts_.insert(hosts_.end(), Tally{});
        found->entry.host = host;
        found->entry.ranks = 0;
      }
      host_index[static_cast<std::size_t>(r)] = static_cast<std::size_t>(found - hosts_.begin());
      ++ranks_here[host_index[static_cast<std::size_t>(r)]];
    }
    // The most it held in any run (repeats may place their ranks differently).
    for (const auto& [index, ranks] : ranks_here) hosts_[index].entry.ranks = std::max(hosts_[index].entry.ranks, ranks);
    return host_index;
  }

  std::vector<Tally> ranks_;  // by rank
  std::vector<Tally> hosts_;  // in order of their first rank (in the first run that has them)
  double rank_steps_ = 0;     // every run's training ranks times its steps
  std::vector<double> all_compute_s_;
  int training_ranks_ = 0;
  int runs_ = 0;
  int64_t steps_ = 0;
};

}  // namespace

bool beyond_chance(int64_t count, int64_t steps, double chance) {
  if (steps <= 0) return false;
  const auto n = static_cast<double>(steps);
  const double expected = n * chance;
  const double sigma = std::sqrt(n * chance * (1 - chance));
  return 2 * count > steps && static_cast<double>(count) > expected + kChanceSigmas * sigma;
}

const Straggling* Stragglers::flagged_entry() const {
  if (flagged == "rank") return &straggler;
  if (flagged == "host") return most_often_slowest(hosts);
  return nullptr;
}

Stragglers find_stragglers(const std::vector<const Measurements*>& runs) {
  RunTallies tallies;
  for (const Measurements* run : runs) {
    if (run != nullptr) tallies.add(*run);
  }
  Stragglers result = tallies.finish();
  if (!result.measured) return result;

  // Why both conditions. On a machine with more ranks than cores, or any busy one, every rank's
  // compute jitters by a scheduler slice now and then, and with no straggler each of k ranks is
  // the slowest in about 1/k of the steps; with 2 ranks that is half of them, so "more than half"
  // alone would flag about every other 2-rank run. The binomial test asks for a share that
  // chance gives less than once in about 700 runs (3 sigma, one-sided). Chance is not the only
  // noise: a rank may be a little slower all along for reasons no one would call a straggler (it
  // shares its core with the launcher, its data happen to be slower, it writes the partial
  // measurements), and then it is the slowest in most steps by a hair. The lead floor leaves out
  // what costs the others less than kMinLeadShare of a typical rank's compute, or less than
  // kMinLeadS (the scale of timer and scheduling noise): not worth anyone's search. Measured on 4
  // ranks on 2 cores (iris_mlp, 600 steps, 9 runs, no delay): the most-often slowest rank had
  // 27-45% of the steps (chance gives 25%: the share alone would soon fire) with median leads of
  // 4-28 us; a 2 ms injected delay led by 2.05 ms in 100% of the steps.
  // On a loaded machine a scheduler slice (~1 ms and more) lands on one rank more than another,
  // and a steady lead of a fraction of it is how the ranks' jitter shows, not a straggler: in CI,
  // 4 ranks on 2 cores beside a compile, rank 0 was the slowest in 62% of 60 steps by 0.23 ms with
  // no delay. The ranks' typical jitter (the median over ranks, so that a straggler's own
  // intermittent delays do not raise it) sets the floor too. It does not catch a rank that waits
  // for a core a little in every step: in CI, 4 ranks on 2 cores with nothing beside them, rank 3
  // was the slowest in 57% of 60 steps by 0.105 ms with no delay (jitter under 0.05 ms), above the
  // 0.1 ms kMinLeadS of then; kMinLeadS is now 0.25 ms, above both leads seen without a delay.
  // Only where each rank has enough samples for its p95 not to be its one slowest step, and
  // without the straggler's own (its delays may come and go).
  std::vector<double> jitters;
  for (const Straggling& rank : result.ranks) {
    if (rank.rank != result.straggler.rank && rank.compute_samples >= kJitterMinSamples) {
      jitters.push_back(std::max(0.0, rank.compute_p95_s - rank.compute_median_s));
    }
  }
  result.typical_jitter_s = jitters.empty() ? 0 : median_of(jitters);
  result.noise_floor_s = std::max({kMinLeadS, kMinLeadShare * result.median_compute_s,
                                   kJitterMultiple * result.typical_jitter_s});
  const auto stands_out = [&](const Straggling& entry, double chance) {
    return beyond_chance(entry.slowest_steps, result.steps, chance) && entry.lead_median_s >= result.noise_floor_s;
  };
  const auto k = static_cast<double>(std::max(tallies.training_ranks(), 1));
  if (stands_out(result.straggler, 1 / k)) {
    result.flagged = "rank";
  } else if (result.hosts.size() >= 2) {
    const Straggling& host = *most_often_slowest(result.hosts);
    if (stands_out(host, host.chance)) result.flagged = "host";
  }
  return result;
}

std::string describe_straggling(const Straggling& entry) {
  const std::string who = entry.rank >= 0
                              ? fmt::format("rank {}{}", entry.rank, entry.host.empty() ? "" : " (" + entry.host + ")")
                              : fmt::format("host {} ({} rank(s))", entry.host, entry.ranks);
  return fmt::format(
      "{} was the slowest in {:.0f}% of the steps, leading the others' median by {:.3g} ms (p95 {:.3g} ms), a wait "
      "of {:.3g} ms per step",
      who, 100 * entry.share, 1e3 * entry.lead_median_s, 1e3 * entry.lead_p95_s, 1e3 * entry.wait_per_step_s);
}

}  // namespace harness
