#include <iostream>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/cli/study_loading.h"
#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/text.h"
#include "harness/model/model_report.h"
#include "harness/results/html_report.h"
#include "harness/results/result_set.h"

namespace harness {
namespace {

// A results directory's records, as `harness plot` reads them (read-only: no lock). A damaged
// record is refused, as plot refuses it: a fit without it would lose a backend or a size silently.
ResultSet load_results(const std::string& dir, const std::string& option) {
  const ResultsDirectory directory(dir);
  const Experiment experiment = load_stored_experiment(directory, option);
  ResultSet set = ResultSet::load(directory, experiment, expand(experiment), true);
  if (set.runs().empty()) throw ConfigError(fmt::format("{}{}: no records of its experiment's points", option, dir));
  return set;
}

}  // namespace

int model_command(const ModelCommandOptions& options) {
  try {
    std::vector<int> ranks;
    if (options.ranks.empty()) {
      for (int p = 1; p <= 1024; p *= 2) ranks.push_back(p);
    }
    for (const std::string& item : options.ranks.empty() ? std::vector<std::string>{}
                                                          : split_comma_list(options.ranks, "--ranks")) {
      const Json value = Json::parse(item, nullptr, false);
      ranks.push_back(static_cast<int>(read_integer(value.is_discarded() ? Json(item) : value, "--ranks", 1,
                                                    std::numeric_limits<int>::max(), "positive integers")));
    }
    const ResultSet comm = load_results(options.comm_dir, "");
    const CostModel model = fit_comm_run(comm, options.comm_dir);
    // Everything is validated and computed before anything is written: a refused --predict leaves
    // the comm run's directory as it was.
    std::optional<ResultSet> train;
    std::optional<TrainingPrediction> prediction;
    if (!options.train_dir.empty()) {
      train = load_results(options.train_dir, "--predict ");
      std::vector<std::string> notes;
      std::set<std::string> train_builds;
      for (const Run& run : train->runs()) train_builds.insert(run.record.settings.build);
      const auto fits = prediction_fits(model, train_builds, notes);
      prediction = predict_training(*train, fits, ranks, model.hosts, model.max_ranks);
      prediction->assumptions.insert(prediction->assumptions.end(), notes.begin(), notes.end());
    }
    std::cout << cost_model_console(model);
    std::vector<std::string> written = write_cost_model(model, comm);
    written.push_back(write_html_report(comm, ResultsDirectory(options.comm_dir)));
    if (prediction) {
      std::cout << "\nPredicted for " << options.train_dir << " (speedup against one rank without communication)\n"
                << prediction_console(*prediction);
      const auto more = write_prediction(*prediction, model, *train, options.train_dir);
      written.insert(written.end(), more.begin(), more.end());
      written.push_back(write_html_report(*train, ResultsDirectory(options.train_dir)));
    }
    std::cout << "\nWrote:\n";
    for (const auto& file : written) std::cout << "  " << file << "\n";
  } catch (const Error& error) {
    return report_error(error);
  }
  return kExitOk;
}

}  // namespace harness
