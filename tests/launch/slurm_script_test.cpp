// The SLURM launcher's job scripts: golden files of what it submits in each mode, and every value
// quoted (a rendered script run by bash gives each argument back byte for byte and executes
// nothing of it). The options refused before anything is rendered: slurm_options_test.cpp.
#include "harness/launch/slurm_script.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/process.h"
#include "harness/launch/scheduler.h"
#include "harness/launch/slurm_follow.h"
#include "harness/launch/slurm_scheduler.h"
#include "harness/launch/sweep_runner.h"
#include "harness/study/settings.h"
#include "tests/launch/launcher_option_error.h"
#include "tests/common/read_text.h"

namespace harness {
namespace {
namespace fs = std::filesystem;
using testing::option_error;

fs::path script_scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("harness_slurm_script_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Compares with tests/launch/golden/<name>; HARNESS_UPDATE_GOLDEN=1 rewrites the file instead.
void expect_golden(const std::string& text, const std::string& name) {
  const fs::path path = fs::path(HARNESS_SOURCE_DIR) / "tests/launch/golden" / name;
  if (std::getenv("HARNESS_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  EXPECT_EQ(text, read_text(path)) << "differs from " << path << " (HARNESS_UPDATE_GOLDEN=1 rewrites it)";
}

// Six points of a sweep: ranks 1 and 2, three batch sizes.
std::vector<JobSpec> sweep_jobs() {
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 6; ++i) {
    JobSpec job;
    job.name = "p00" + std::to_string(i) + "-0000000" + std::to_string(i);
    job.key = "0000000" + std::to_string(i);
    job.ranks = i < 3 ? 1 : 2;
    job.time_limit_s = 600;
    job.log_path = "/results/logs/" + job.name + ".log";
    job.measurements_path = "/results/logs/" + job.name + ".run.measurements.json";
    job.argv = {"/opt/harness", "worker", "--settings", R"({"ranks":)" + std::to_string(job.ranks) + "}",
                "--output", job.measurements_path};
    jobs.push_back(job);
  }
  return jobs;
}

std::string plan_of(SlurmMode mode, RankStarter starter = RankStarter::kSrun) {
  SlurmOptions options;
  options.mode = mode;
  options.partition = "debug";
  options.setup = {"module load openmpi"};
  ClusterConfig cluster;
  cluster.max_array_size = 2;  // the ranks-1 group of three splits into arrays of 2 and 1
  cluster.cpus_per_node = 2;
  SlurmScheduler scheduler(options, "exp.json: launcher", cluster, starter);
  scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
  return scheduler.plan(sweep_jobs());
}

TEST(SlurmScript, PerPointArrayAndPackScriptsAreAsGolden) {
  expect_golden(plan_of(SlurmMode::kPerPoint), "per_point.txt");
  expect_golden(plan_of(SlurmMode::kArray), "array.txt");
  expect_golden(plan_of(SlurmMode::kPack, RankStarter::kMpirun), "pack_mpirun.txt");
}

TEST(SlurmScript, AutoPacksShortPointsAndArraysLongOnes) {
  SlurmOptions options;
  ClusterConfig cluster;
  SlurmScheduler scheduler(options, "launcher", cluster, RankStarter::kSrun);
  scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
  std::vector<JobSpec> jobs = sweep_jobs();
  // Earlier runs took 20 s: one allocation runs them all.
  for (auto& job : jobs) job.expected_s = 20;
  EXPECT_NE(scheduler.plan(jobs).find("1 job(s) for 6 point(s)"), std::string::npos) << scheduler.plan(jobs);
  // Never measured, with a 10-minute limit each: an array per resource group.
  for (auto& job : jobs) job.expected_s = 0;
  const std::string plan = scheduler.plan(jobs);
  EXPECT_NE(plan.find("2 job(s) for 6 point(s)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("#SBATCH --array=0-2"), std::string::npos) << plan;
}

TEST(SlurmScript, NodeHoursCountEveryArrayTaskAndAPackOnce) {
  // Arrays: 6 tasks of 11 minutes on one node. Pack: one allocation of 6 × (600 + 30) + 60 s.
  EXPECT_NE(plan_of(SlurmMode::kArray).find("at most 1.10 node-hour(s)"), std::string::npos);
  EXPECT_NE(plan_of(SlurmMode::kPack).find("at most 1.07 node-hour(s)"), std::string::npos);
}

// The job of a point as `harness run` makes it, on `device`, with this layout.
JobSpec point_job(int index, const std::string& device, int ranks, int nodes, int ranks_per_node) {
  Point point;
  point.index = index;
  point.id = fmt::format("p00{}-0000000{}", index, index);
  point.settings.device = device;
  point.settings.ranks = ranks;
  point.settings.nodes = nodes;
  point.settings.ranks_per_node = ranks_per_node;
  point.settings.timeout_s = 600;
  return SweepRunner::job_for(point, ResultsDirectory("/results"), RankPrograms("/opt/harness"), "run1");
}

// The job scripts of a plan, by the point that starts each: "--- job ..." up to the next.
std::vector<std::string> plan_jobs(const std::string& plan) {
  std::vector<std::string> jobs;
  for (std::size_t at = plan.find("--- job "); at != std::string::npos;) {
    const std::size_t next = plan.find("--- job ", at + 1);
    jobs.push_back(plan.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return jobs;
}

TEST(SlurmScript, ACudaPointAsksForAGpuPerRankOnANodeAndTheDryRunSaysWhichEachRankUses) {
  // One per rank on the busiest node: ranks_per_node, or as SLURM spreads them (3 on 2 nodes: 2).
  EXPECT_EQ(point_job(0, "cuda", 4, 2, 2).gpus_per_node, 2);
  EXPECT_EQ(point_job(0, "cuda", 3, 2, 0).gpus_per_node, 2);
  EXPECT_EQ(point_job(0, "cuda", 1, 1, 0).gpus_per_node, 1);
  EXPECT_EQ(point_job(0, "cpu", 4, 2, 2).gpus_per_node, 0);
  SlurmOptions options;
  options.mode = SlurmMode::kPack;
  SlurmScheduler scheduler(options, "launcher", ClusterConfig{}, RankStarter::kSrun);
  scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
  // The same layout on the cpu and on cuda: not one allocation, as only one needs GPUs.
  const std::vector<JobSpec> jobs = {point_job(0, "cuda", 4, 2, 2), point_job(1, "cpu", 4, 2, 2),
                                     point_job(2, "cuda", 1, 1, 0)};
  const std::string plan = scheduler.plan(jobs);
  const std::vector<std::string> scripts = plan_jobs(plan);
  ASSERT_EQ(scripts.size(), 3U) << plan;
  EXPECT_NE(scripts[0].find("--- job 1 of 3: pack of 1 point(s); 2 GPU(s) per node (one per rank on a node): a "
                            "rank uses GPU (its local rank mod 2)\n"),
            std::string::npos)
      << scripts[0];
  EXPECT_NE(scripts[0].find("\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"), std::string::npos) << scripts[0];
  EXPECT_NE(scripts[0].find("\n#SBATCH --gpus-per-node=2\n"), std::string::npos) << scripts[0];
  EXPECT_EQ(scripts[1].find("GPU"), std::string::npos) << scripts[1];
  EXPECT_EQ(scripts[1].find("--gpus-per-node"), std::string::npos) << scripts[1];
  EXPECT_NE(scripts[2].find("\n#SBATCH --gpus-per-node=1\n"), std::string::npos) << scripts[2];
  // Only the sbatch line asks: srun's steps inherit the job's GPUs.
  EXPECT_EQ(plan.find("srun --mpi=pmix --gpus"), std::string::npos) << plan;
}

TEST(SlurmScript, TheLaunchersGpusPerNodeWinsOverWhatThePointsNeed) {
  SlurmOptions options;
  options.mode = SlurmMode::kPerPoint;
  options.gpus_per_node = 1;
  SlurmScheduler scheduler(options, "launcher", ClusterConfig{}, RankStarter::kSrun);
  scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
  const std::string plan = scheduler.plan({point_job(0, "cuda", 4, 2, 2), point_job(1, "cpu", 2, 1, 0)});
  const std::vector<std::string> scripts = plan_jobs(plan);
  ASSERT_EQ(scripts.size(), 2U) << plan;
  // Two ranks on a node, one GPU: they share it.
  EXPECT_NE(scripts[0].find("; 1 GPU(s) per node (launcher gpus_per_node): a rank uses GPU (its local rank mod 1), "
                            "so up to 2 ranks share one\n"),
            std::string::npos)
      << scripts[0];
  EXPECT_NE(scripts[0].find("\n#SBATCH --gpus-per-node=1\n"), std::string::npos) << scripts[0];
  // A cpu point gets what the launcher asks for, and the plan says it does not use it.
  EXPECT_NE(scripts[1].find("; 1 GPU(s) per node (launcher gpus_per_node), unused: the points run on the cpu\n"),
            std::string::npos)
      << scripts[1];
  EXPECT_NE(scripts[1].find("\n#SBATCH --gpus-per-node=1\n"), std::string::npos) << scripts[1];
  EXPECT_NE(option_error(R"({"name": "slurm", "gpus_per_node": 65})")
                .find("launcher.gpus_per_node: expected an integer from 0 to 64"),
            std::string::npos);
}

// The --time=N line of every job in a plan, in minutes.
std::vector<int64_t> job_minutes(const std::string& plan) {
  std::vector<int64_t> minutes;
  for (std::size_t at = plan.find("#SBATCH --time="); at != std::string::npos;
       at = plan.find("#SBATCH --time=", at + 1)) {
    minutes.push_back(std::stoll(plan.substr(at + 15)));
  }
  return minutes;
}

TEST(SlurmScript, APackIsSplitSoThatNoJobAsksForMoreThanAJobMay) {
  std::vector<JobSpec> jobs = sweep_jobs();  // six points of 600 s: one pack of 6 × 630 + 60 s
  for (const bool from_partition : {false, true}) {
    SlurmOptions options;
    options.mode = SlurmMode::kPack;
    ClusterConfig cluster;
    // 1500 s holds two points (60 + 2 × 630 = 1320 s), not three (1950 s).
    if (from_partition) {
      cluster.max_time_s = 1500;
    } else {
      options.max_time_per_job_s = 1500;
    }
    SlurmScheduler scheduler(options, "launcher", cluster, RankStarter::kSrun);
    scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
    const std::string plan = scheduler.plan(jobs);
    EXPECT_NE(plan.find("slurm: 3 job(s) for 6 point(s)"), std::string::npos) << plan;
    EXPECT_EQ(job_minutes(plan), (std::vector<int64_t>{22, 22, 22})) << plan;
  }
  // 200 points at the default 600 s would ask for 2101 minutes (35 h) in one job; a partition of
  // one day takes them in two, neither over the day.
  std::vector<JobSpec> many;
  for (int i = 0; i < 200; ++i) {
    JobSpec job = jobs[0];
    job.name = "p" + std::to_string(1000 + i);
    many.push_back(job);
  }
  SlurmOptions options;
  options.mode = SlurmMode::kPack;
  ClusterConfig cluster;
  cluster.max_time_s = 24 * 3600;
  SlurmScheduler scheduler(options, "launcher", cluster, RankStarter::kSrun);
  scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
  const std::string plan = scheduler.plan(many);
  EXPECT_NE(plan.find("slurm: 2 job(s) for 200 point(s)"), std::string::npos) << plan.substr(plan.size() - 200);
  for (const int64_t minutes : job_minutes(plan)) EXPECT_LE(minutes, 24 * 60);
}

// sbatch reads --output as a pattern: "%" in the results directory is its own, and a backslash
// would turn the job id off (every job writing one file).
TEST(SlurmScript, AResultsDirectorysPercentIsEscapedForSbatchAndABackslashRefused) {
  SlurmScheduler scheduler(SlurmOptions{}, "launcher", ClusterConfig{}, RankStarter::kSrun);
  scheduler.prepare({"/results/100%/jobs", "5eed0001", "/work"});
  const std::string plan = scheduler.plan({sweep_jobs()[0]});
  EXPECT_NE(plan.find(" --output=/results/100%%/jobs/batch/%j.out "), std::string::npos) << plan;
  EXPECT_NE(plan.find("status_dir='/results/100%/jobs/status'"), std::string::npos) << plan;
  EXPECT_THROW(
      try { scheduler.prepare({"/results/a\\b/jobs", "5eed0001", "/work"}); } catch (const ConfigError& error) {
        EXPECT_STREQ(error.what(), "/results/a\\b/jobs: a '\\' in the results directory would turn off the job id in "
                                   "sbatch's --output pattern, so that every job wrote one file: expected a path "
                                   "without '\\'");
        throw;
      },
      ConfigError);
}

TEST(SlurmScript, TimeLimitsAreBoundedAndNeverWrapAround) {
  // The longest a point may ask for (365 days) is written as it is, not wrapped by an int.
  SlurmOptions options;
  options.mode = SlurmMode::kPerPoint;
  SlurmScheduler scheduler(options, "launcher", ClusterConfig{}, RankStarter::kSrun);
  scheduler.prepare({"/results/jobs", "5eed0001", "/work"});
  std::vector<JobSpec> jobs = {sweep_jobs()[0]};
  jobs[0].time_limit_s = kMaxTimeLimitS;
  const std::string plan = scheduler.plan(jobs);
  EXPECT_EQ(job_minutes(plan), (std::vector<int64_t>{365 * 24 * 60 + 1})) << plan;
  EXPECT_NE(plan.find("at most 8760.02 node-hour(s)"), std::string::npos) << plan;
  // More is refused where it is read, with the bound.
  EXPECT_EQ(option_error(R"({"name": "slurm", "time_limit_s": 1e12})"),
            "exp.json: launcher.time_limit_s: expected a positive number of seconds up to 31536000 (365 days), "
            "got 1000000000000.0");
  EXPECT_NE(option_error(R"({"name": "slurm", "max_time_per_job_s": 2e11})").find("launcher.max_time_per_job_s"),
            std::string::npos);
  EXPECT_EQ(option_error(R"({"name": "slurm", "time_limit_s": 31536000, "max_time_per_job_s": 3600})"), "");
}

TEST(SlurmScheduler, AJobReadsAndWritesOnlyItsOwnSubmissionsStatusFileAndLog) {
  const fs::path dir = script_scratch("attempts");
  // No SLURM command on PATH: the scheduler's queries fail, and the files alone speak.
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  ::setenv("PATH", dir.c_str(), 1);
  SlurmScheduler scheduler(SlurmOptions{}, "launcher", ClusterConfig{}, RankStarter::kSrun);
  scheduler.prepare({(dir / "jobs").string(), "5eed0001", dir.string()});
  JobSpec job = sweep_jobs()[0];
  job.attempt = "20261126T000002Z-2";
  job.log_path = (dir / "p000.log").string();
  // Its script names the status file and the log after the point and the submission.
  const std::string plan = scheduler.plan({job});
  EXPECT_NE(plan.find("run_point '" + job.name + ".20261126T000002Z-2' "), std::string::npos) << plan;
  EXPECT_NE(plan.find("'" + (dir / "p000.20261126T000002Z-2.log").string() + "'"), std::string::npos) << plan;
  ASSERT_TRUE(scheduler.adopt(job, "per-point:12"));
  fs::create_directories(dir / "jobs" / "status");
  // An earlier job of the same point, still running when it was submitted again, finished ok and
  // wrote the point's log: that is not this job's end, nor its log.
  std::ofstream(dir / "jobs" / "status" / (job.name + ".20261126T000001Z-1.status")) << "started 1 h 11\nfinished 2 0\n";
  std::ofstream(dir / "p000.log") << "the earlier job's\n";
  const auto before = scheduler.poll(0);
  std::ofstream(dir / "p000.20261126T000002Z-2.log") << "this job's\n";
  std::ofstream(dir / "jobs" / "status" / (job.name + ".20261126T000002Z-2.status")) << "started 1 h 12\nfinished 2 0\n";
  const auto after = scheduler.poll(0);
  ::setenv("PATH", path.c_str(), 1);
  EXPECT_TRUE(before.empty());
  ASSERT_EQ(after.size(), 1U);
  EXPECT_EQ(after[0].end, JobEnd::kCompleted);
  // Ended, its log stays its own; the sweep makes it the point's once the record is written
  // (SchedulerSeam.ARunAgainReplacesTheLogOnlyWhenItsJobEnds).
  EXPECT_EQ(read_text(attempt_log_path(job)), "this job's\n");
  EXPECT_EQ(read_text(dir / "p000.log"), "the earlier job's\n");
}

// What an experiment may carry into a script: a data path with command substitution, backticks,
// a semicolon and quotes of both kinds.
const std::string kHostile = "/data/x$(touch MARKER1)`touch MARKER2`;touch MARKER3;'\"$HOME";

TEST(SlurmScript, RenderedScriptGivesEveryValueBackAndExecutesNone) {
  const fs::path dir = script_scratch("hostile");
  JobScript script;
  script.mode = SlurmMode::kPack;
  script.status_dir = (dir / "status with 'quote").string();
  fs::create_directories(script.status_dir);
  for (int i = 0; i < 2; ++i) {
    ScriptPoint point;
    point.id = "p00" + std::to_string(i);
    point.threads = 1;
    point.time_limit_s = 30;
    point.measurements_path = (dir / ("m" + std::to_string(i))).string();
    point.log_path = (dir / ("p00" + std::to_string(i) + ".log")).string();
    point.command = {"printf", "%s\\n", kHostile};
    script.points.push_back(point);
  }
  const fs::path path = dir / "job.sh";
  write_file_atomically(path.string(), render_job_script(load_job_template("", "launcher.template"), script));
  ProcessRequest request;
  request.argv = {"bash", path.string()};
  request.working_directory = dir.string();
  request.log_path = (dir / "bash.log").string();
  request.timeout_s = 60;
  const ProcessOutcome outcome = run_process(request);
  EXPECT_TRUE(outcome.ok()) << read_text(dir / "bash.log");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(read_text(dir / ("p00" + std::to_string(i) + ".log")), kHostile + "\n");
    const PointStatusFile status = read_status_file(script.status_dir + "/p00" + std::to_string(i) + ".status");
    EXPECT_TRUE(status.started && status.finished);
    EXPECT_EQ(status.exit_code, 0);
  }
  for (const char* marker : {"MARKER1", "MARKER2", "MARKER3"}) EXPECT_FALSE(fs::exists(dir / marker)) << marker;
}

TEST(SlurmScript, ATerminatedJobLeavesAFinishedLineEvenWhenKilledWhileWaitingAndAPointOverItsLimitSays124) {
  const fs::path dir = script_scratch("signals");
  JobScript script;
  script.mode = SlurmMode::kPack;
  script.status_dir = dir.string();
  ScriptPoint slow;
  slow.id = "slow";
  slow.threads = 1;
  slow.time_limit_s = 0.5;
  slow.measurements_path = (dir / "m").string();
  slow.log_path = (dir / "slow.log").string();
  slow.command = {"sleep", "30"};
  // Like srun, which waits for its step longer than the scheduler waits between TERM and KILL
  // (KillWait): it outlives the TERM, so the script is KILLed while its trap waits.
  ScriptPoint stopped = slow;
  stopped.id = "stopped";
  stopped.time_limit_s = 60;
  // It says when it ignores TERM: a TERM sent before that would stop it (a flake under load).
  const fs::path ignoring = dir / "ignoring_term";
  stopped.command = {"bash", "-c", "trap '' TERM; : > '" + ignoring.string() + "'; sleep 3"};
  script.points = {slow, stopped};
  const fs::path path = dir / "job.sh";
  write_file_atomically(path.string(), render_job_script(load_job_template("", "t"), script));
  ProcessRequest request;
  request.argv = {"bash", path.string()};
  request.log_path = (dir / "bash.log").string();
  ChildProcess job(request);
  // The second point starts once the first has timed out; then the job is cancelled (TERM).
  for (int i = 0; i < 400 && !fs::exists(ignoring); ++i) wait_for_any({}, 0.05);
  ASSERT_TRUE(read_status_file((dir / "stopped.status").string()).started);
  ::kill(job.pid(), SIGTERM);
  std::optional<ProcessOutcome> outcome;
  for (int i = 0; i < 10 && !(outcome = job.poll()); ++i) wait_for_any({&job}, 0.05);
  EXPECT_FALSE(outcome.has_value()) << "the trap did not wait for the point's command";
  ::kill(job.pid(), SIGKILL);
  for (int i = 0; i < 200 && !(outcome = job.poll()); ++i) wait_for_any({&job}, 0.05);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(read_status_file((dir / "slow.status").string()).exit_code, 124);
  const PointStatusFile status = read_status_file((dir / "stopped.status").string());
  EXPECT_TRUE(status.finished) << read_text(dir / "stopped.status");
  EXPECT_EQ(status.exit_code, 143);
}

}  // namespace
}  // namespace harness
