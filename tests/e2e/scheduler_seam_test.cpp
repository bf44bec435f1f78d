// A scheduler added through the table alone runs a sweep: the seam that SLURM plugs into.
// "direct" starts the rank program itself, without mpirun: a one-rank MPI job (a singleton).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <sstream>

#include "e2e_helpers.h"
#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/launch/process_jobs.h"
#include "harness/launch/sweep_runner.h"
#include "harness/results/result_set.h"
#include "harness/study/validate.h"

namespace harness::e2e {
namespace {

struct DirectOptions {
  int max_parallel = 1;
};

const std::vector<OptionRow<DirectOptions>>& direct_option_rows() {
  static const std::vector<OptionRow<DirectOptions>> rows = {
      {"max_parallel", "an integer from 1 to 4", "points at once", R"({"type": "integer"})",
       [](DirectOptions& o, const Json& v, const std::string& where) {
         o.max_parallel = static_cast<int>(read_integer(v, where, 1, 4, "an integer from 1 to 4"));
       },
       [](const DirectOptions& o) { return Json(o.max_parallel); }},
  };
  return rows;
}

class DirectScheduler final : public Scheduler {
 public:
  explicit DirectScheduler(DirectOptions options) : options_(options) {}
  std::string_view name() const override { return "direct"; }
  void check_available() const override {}
  ResourceLimits limits() const override {
    return {1, "the direct launcher starts one process", 1, "the direct launcher starts one process"};
  }
  int max_parallel() const override { return options_.max_parallel; }
  int threads_per_rank(const JobSpec& /*job*/) const override { return 1; }
  std::vector<std::string> command_for(const JobSpec& job) const override { return job.argv; }
  JobId submit(const JobSpec& job) override {
    if (refuse) throw LaunchError("refused by the test");
    ProcessRequest request;
    request.argv = command_for(job);
    // A job that leaves no log of its own, as a cluster job cancelled while queued.
    request.log_path = leave_no_log ? "/dev/null" : attempt_log_path(job);
    request.timeout_s = job.time_limit_s;
    request.environment = {{"HARNESS_THREADS_PER_RANK", "1"}, {"OMP_NUM_THREADS", "1"}};
    ++submitted;
    return jobs_.start(request);
  }
  std::vector<JobResult> poll(double wait_s) override {
    most_in_flight = std::max(most_in_flight, static_cast<int>(jobs_.running()));
    return jobs_.poll(wait_s);
  }
  void cancel(JobId job) override { jobs_.cancel(job); }

  static inline bool refuse = false;
  static inline bool leave_no_log = false;
  static inline int submitted = 0;
  static inline int most_in_flight = 0;

 private:
  DirectOptions options_;
  ProcessJobs jobs_;
};

const std::vector<SchedulerInfo>& test_table() {
  static const std::vector<SchedulerInfo> table = {
      {"direct", "the rank program without mpirun, one rank",
       [](const LauncherSpec& spec) -> std::unique_ptr<Scheduler> {
         DirectOptions options;
         read_scheduler_options(spec, direct_option_rows(), options);
         return std::make_unique<DirectScheduler>(options);
       },
       [] { return option_docs(direct_option_rows()); }},
  };
  return table;
}

const char* kExperiment = R"({"name": "seam", "launcher": {"name": "direct", "max_parallel": 2},
  "settings": {"workload": "iris_mlp", "epochs": 2, "ranks": 1},
  "sweep": {"batch_size": [4, 8, 16]}})";

// kExperiment's points through the direct scheduler into DIR/out, run as often as a test asks.
struct SeamSweep {
  explicit SeamSweep(const fs::path& dir) : directory((dir / "out").string()) {
    validate_points(experiment, points, scheduler->limits());
    directory.create();
    options.rank_programs = RankPrograms(HARNESS_BINARY);
    options.command_line = {"test"};
  }
  SweepOutcome run(std::ostringstream& out) {
    return SweepRunner(experiment, points, *scheduler, directory, options, out).run();
  }

  const Experiment experiment = parse_experiment(kExperiment, "seam.json");
  const std::vector<Point> points = expand(experiment);
  const std::unique_ptr<Scheduler> scheduler = make_scheduler(experiment.launcher, test_table());
  const ResultsDirectory directory;
  SweepOptions options;
};

TEST(SchedulerSeam, ASchedulerFromTheTableRunsASweepAndItsRecordsSayWhich) {
  SeamSweep sweep(scratch("seam"));
  std::ostringstream out;
  const SweepOutcome outcome = sweep.run(out);
  EXPECT_EQ(outcome.ran, 3) << out.str();
  EXPECT_EQ(outcome.failed, 0) << out.str();
  EXPECT_EQ(DirectScheduler::submitted, 3);
  EXPECT_EQ(DirectScheduler::most_in_flight, 2);  // max_parallel, honoured
  EXPECT_NE(out.str().find("p000-"), std::string::npos);
  EXPECT_NE(out.str().find(" started\n"), std::string::npos) << out.str();

  const ResultSet set = ResultSet::load(sweep.directory, sweep.experiment, sweep.points, true);
  ASSERT_EQ(set.runs().size(), 3U);
  for (const auto& run : set.runs()) {
    EXPECT_TRUE(run.record.ok()) << run.record.reason;
    EXPECT_EQ(run.record.launch.scheduler, "direct");
    EXPECT_EQ(run.record.launch.command[1], "worker");
    ASSERT_TRUE(run.record.timing.has_value());
    EXPECT_GT(run.record.timing->train_s, 0);
  }

  // Run again: every point is kept, nothing is submitted.
  std::ostringstream again_out;
  const SweepOutcome again = sweep.run(again_out);
  EXPECT_EQ(again.kept, 3);
  EXPECT_EQ(again.ran, 0);
  EXPECT_EQ(DirectScheduler::submitted, 3);
}

TEST(SchedulerSeam, ItsLimitsAndOptionsAreCheckedLikeTheLocalOnes) {
  Experiment experiment = parse_experiment(
      R"({"name": "seam", "launcher": "direct", "sweep": {"ranks": [1, 2]}})", "seam.json");
  auto scheduler = make_scheduler(experiment.launcher, test_table());
  try {
    validate_points(experiment, expand(experiment), scheduler->limits());
    FAIL() << "two ranks passed a one-rank launcher";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("the direct launcher starts one process"), std::string::npos)
        << error.what();
  }
  experiment = parse_experiment(R"({"name": "seam", "launcher": {"name": "direct", "max_paralel": 9}})",
                                "seam.json");
  try {
    make_scheduler(experiment.launcher, test_table());
    FAIL() << "a misspelt option passed";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "seam.json: launcher.max_paralel: unknown option \"max_paralel\" (did you mean \"max_parallel\"?)");
  }
}

// A point run again keeps its earlier record and log until the new ones replace them: a refused
// submission sets both aside unchanged (<id>.json.superseded, <id>.log.superseded); a job that
// ends ok makes its own log (written apart while it runs) the point's, and leaves no other.
TEST(SchedulerSeam, ARunAgainReplacesTheLogOnlyWhenItsJobEnds) {
  SeamSweep sweep(scratch("seam_logs"));
  const ResultsDirectory& directory = sweep.directory;
  const std::vector<Point>& points = sweep.points;
  std::ostringstream first_out;
  ASSERT_EQ(sweep.run(first_out).failed, 0) << first_out.str();
  const auto logs_and_records = [&] {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(directory.logs_dir())) {
      files[entry.path().filename().string()] = read_text(entry.path());
    }
    for (const auto& point : points) files[point.id + ".record"] = read_text(directory.record_path(point.id));
    return files;
  };
  const auto before = logs_and_records();
  ASSERT_EQ(before.size(), 2 * points.size()) << "a log and a record per point";
  for (const auto& point : points) {
    ASSERT_FALSE(before.at(point.id + ".log").empty()) << point.id;
    fs::last_write_time(directory.log_path(point.id), fs::file_time_type::clock::now() - std::chrono::hours(1));
  }

  sweep.options.fresh = true;
  DirectScheduler::refuse = true;
  std::ostringstream refused_out;
  const SweepOutcome refused = sweep.run(refused_out);
  DirectScheduler::refuse = false;
  EXPECT_EQ(refused.failed, 3) << refused_out.str();
  EXPECT_EQ(refused.waiting_aside, 3) << refused_out.str();
  // Set aside untouched, with their logs: nothing lost, and nothing that passes for this run's.
  std::map<std::string, std::string> aside;
  for (const auto& entry : fs::directory_iterator(directory.logs_dir())) {
    aside[entry.path().filename().string()] = read_text(entry.path());
  }
  for (const auto& point : points) {
    EXPECT_FALSE(fs::exists(directory.record_path(point.id))) << point.id;
    aside[point.id + ".record.superseded"] = read_text(directory.record_path(point.id) + ".superseded");
  }
  std::map<std::string, std::string> before_aside;
  for (const auto& [name, text] : before) before_aside[name + ".superseded"] = text;
  EXPECT_EQ(aside, before_aside) << "a refused submission changed a point's log or record";

  std::ostringstream again_out;
  const SweepOutcome again = sweep.run(again_out);
  EXPECT_EQ(again.failed, 0) << again_out.str();
  const auto after = logs_and_records();
  EXPECT_EQ(after.size(), before.size()) << "a job's own log was left beside the point's";
  for (const auto& point : points) {
    EXPECT_GT(fs::last_write_time(directory.log_path(point.id)),
              fs::file_time_type::clock::now() - std::chrono::minutes(30))
        << point.id << ": the log is still the earlier run's";
  }

  // A job that left no log: the earlier run's does not speak for it.
  DirectScheduler::leave_no_log = true;
  std::ostringstream silent_out;
  const SweepOutcome silent = sweep.run(silent_out);
  DirectScheduler::leave_no_log = false;
  EXPECT_EQ(silent.failed, 0) << silent_out.str();
  for (const auto& point : points) {
    EXPECT_FALSE(fs::exists(directory.log_path(point.id))) << point.id << ": an earlier run's log stayed";
  }
}

}  // namespace
}  // namespace harness::e2e
