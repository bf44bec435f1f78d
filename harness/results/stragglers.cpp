#include "harness/results/stragglers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "harness/results/consistent_lead.h"
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

// The entry whose standing is least likely by chance (on a tie, the larger excess, then the first).
const Straggling* most_consistent(const std::vector<Straggling>& entries) {
  const Straggling* best = nullptr;
  for (const Straggling& entry : entries) {
    if (best == nullptr || entry.p_value < best->p_value ||
        (entry.p_value == best->p_value && entry.excess_s > best->excess_s)) {
      best = &entry;
    }
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
    all_step_s_.insert(all_step_s_.end(), steps.step_s.begin(), steps.step_s.end());
    if (!steps.rank_compute) return;
    // The flag's test reads the training ranks' compute by rank, and by host.
    RunCompute by_rank;
    RunCompute by_host;
    for (int r = first_training; r < world; ++r) {
      by_rank.group_of.push_back(r);
      by_host.group_of.push_back(static_cast<int>(host_index[static_cast<std::size_t>(r)]));
    }
    for (const std::vector<double>& row : steps.rank_compute->compute_s) {
      if (row.size() < static_cast<std::size_t>(world)) continue;  // the reader refuses these
      for (int r = first_training; r < world; ++r) {
        ranks_[static_cast<std::size_t>(r)].compute_s.push_back(row[static_cast<std::size_t>(r)]);
        all_compute_s_.push_back(row[static_cast<std::size_t>(r)]);
      }
      by_rank.compute_s.emplace_back(row.begin() + first_training, row.begin() + world);
    }
    by_host.compute_s = by_rank.compute_s;
    by_rank_.push_back(std::move(by_rank));
    by_host_.push_back(std::move(by_host));
  }

  // The tallies as entries; `measured` false when no run added steps.
  Stragglers finish() {
    Stragglers result;
    result.runs = runs_;
    result.steps = steps_;
    if (runs_ == 0 || steps_ == 0) return result;
    result.measured = true;
    const std::vector<Consistency> rank_tests = consistency_of(by_rank_, static_cast<int>(ranks_.size()));
    const std::vector<Consistency> host_tests = consistency_of(by_host_, static_cast<int>(hosts_.size()));
    for (std::size_t r = 0; r < ranks_.size(); ++r) set_test(ranks_[r].entry, rank_tests[r]);
    for (std::size_t h = 0; h < hosts_.size(); ++h) set_test(hosts_[h].entry, host_tests[h]);
    for (Tally& tally : ranks_) {
      if (tally.entry.rank < 0) continue;  // a rank that only serves
      // Its host: where it was the slowest most often (else where it first ran).
      int64_t most = 0;
      for (const auto& [host, steps] : tally.slowest_on) {
        if (steps > most) std::tie(most, tally.entry.host) = std::pair(steps, host);
      }
      finish_tally(tally, steps_);
      tally.entry.chance = 1 / static_cast<double>(std::max(training_ranks_, 1));
      result.ranks.push_back(tally.entry);
    }
    for (Tally& tally : hosts_) {
      finish_tally(tally, steps_);
      tally.entry.chance = rank_steps_ > 0 ? tally.rank_steps / rank_steps_ : 0;
      result.hosts.push_back(tally.entry);
    }
    result.straggler = *most_often_slowest(result.ranks);
    result.median_compute_s = median_of(all_compute_s_);
    result.median_step_s = median_of(all_step_s_);
    return result;
  }

  int training_ranks() const { return training_ranks_; }

 private:
  static void set_test(Straggling& entry, const Consistency& test) {
    entry.blocks = test.blocks;
    entry.standing = test.standing;
    entry.p_value = test.p_value;
    entry.excess_s = test.excess_s;
  }

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
  std::vector<double> all_step_s_;
  std::vector<RunCompute> by_rank_;  // each run's sampled compute, grouped by rank
  std::vector<RunCompute> by_host_;  // and by host
  int training_ranks_ = 0;
  int runs_ = 0;
  int64_t steps_ = 0;
};

}  // namespace

const Straggling* Stragglers::flagged_entry() const {
  if (flagged == "rank") return &straggler;
  if (flagged == "host") return most_consistent(hosts);
  return nullptr;
}

Stragglers find_stragglers(const std::vector<const Measurements*>& runs) {
  RunTallies tallies;
  for (const Measurements* run : runs) {
    if (run != nullptr) tallies.add(*run);
  }
  Stragglers result = tallies.finish();
  if (!result.measured) return result;

  // Why the test and not a share of the steps or a lead above a floor: see stragglers.h and
  // consistent_lead.h. What it answered before, with a share beyond 3 sigma of chance and a median
  // lead above max(0.25 ms, 5% of the compute, twice the ranks' jitter): a rank 20% slower on a
  // 1 ms step (0.2 ms) was never flagged; the floor had been raised above two CI false alarms
  // (rank 3 of 4 on 2 cores the slowest in 57% of 60 steps by 0.105 ms; beside a compile, rank 0
  // in 62% of 60 steps by 0.23 ms), both from counting 60 steps of one run as 60 independent
  // draws. Here 60 steps are at most 15 blocks, fewer where the run's noise lasts.
  const auto k = static_cast<double>(std::max(tallies.training_ranks(), 1));
  result.rank_p_limit = kFalseAlarmRate / 2 / k;
  result.host_p_limit = kFalseAlarmRate / 2 / static_cast<double>(std::max<std::size_t>(result.hosts.size(), 1));
  // By enough: in compute, and in what it costs the others (where the records time their steps).
  const double enough_s = kMinExcessShare * result.median_compute_s;
  const double enough_wait_s = kMinWaitShare * result.median_step_s;
  const auto stands_out = [&](const Straggling& entry, double p_limit) {
    return entry.blocks >= 2 && entry.p_value <= p_limit && entry.excess_s >= enough_s && entry.excess_s > 0 &&
           entry.wait_per_step_s >= enough_wait_s;
  };
  // A host whose ranks are slow together is one finding, not one rank's: it is flagged when two
  // or more of its ranks stand out and so does the host; else the rank that stands out most. A
  // host whose ranks take turns (none slower in most steps) is found by the host's test alone.
  std::vector<const Straggling*> standing_out;
  for (const Straggling& rank : result.ranks) {
    if (stands_out(rank, result.rank_p_limit)) standing_out.push_back(&rank);
  }
  const Straggling* host = result.hosts.size() >= 2 ? most_consistent(result.hosts) : nullptr;
  const bool host_stands_out = host != nullptr && stands_out(*host, result.host_p_limit);
  const auto on_host = std::count_if(standing_out.begin(), standing_out.end(), [&](const Straggling* rank) {
    return host != nullptr && rank->host == host->host;
  });
  if (host_stands_out && (standing_out.empty() || on_host >= 2)) {
    result.flagged = "host";
  } else if (!standing_out.empty()) {
    std::vector<Straggling> candidates;
    for (const Straggling* rank : standing_out) candidates.push_back(*rank);
    result.straggler = *most_consistent(candidates);
    result.flagged = "rank";
  }
  return result;
}

std::string describe_straggling(const Straggling& entry) {
  const std::string who = entry.rank >= 0
                              ? fmt::format("rank {}{}", entry.rank, entry.host.empty() ? "" : " (" + entry.host + ")")
                              : fmt::format("host {} ({} rank(s))", entry.host, entry.ranks);
  return fmt::format(
      "{} was the slowest in {:.0f}% of the steps (chance: {:.0f}%), leading the others' median by {:.3g} ms (p95 "
      "{:.3g} ms), a wait of {:.3g} ms per step",
      who, 100 * entry.share, 100 * entry.chance, 1e3 * entry.lead_median_s, 1e3 * entry.lead_p95_s,
      1e3 * entry.wait_per_step_s);
}

std::string describe_flag(const Stragglers& stragglers) {
  const Straggling* entry = stragglers.flagged_entry();
  if (entry == nullptr) return "";
  const double limit = entry->rank >= 0 ? stragglers.rank_p_limit : stragglers.host_p_limit;
  const std::string cost = stragglers.median_step_s > 0
                               ? fmt::format(", a wait of {:.0f}% of the median step",
                                             100 * entry->wait_per_step_s / stragglers.median_step_s)
                               : "";
  return fmt::format(
      "its compute {:.3g} ms ({:.0f}% of the median rank's) above the others' median in the median sampled step{}, "
      "consistently: p {:.2g} over {} blocks of steps (flagged at p <= {:.3g})",
      1e3 * entry->excess_s,
      stragglers.median_compute_s > 0 ? 100 * entry->excess_s / stragglers.median_compute_s : 0.0, cost,
      entry->p_value, entry->blocks, limit);
}

}  // namespace harness
