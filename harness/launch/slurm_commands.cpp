#include "harness/launch/slurm_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/clock.h"
#include "harness/common/errors.h"
#include "harness/common/process.h"
#include "harness/common/text.h"

namespace harness {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

// A command's output as one line of a message.
std::string one_line(const std::string& text) {
  std::string line;
  for (const char c : text) {
    if (c == '\n') {
      if (!line.empty() && line.back() != ' ') line += "; ";
    } else if (c != '\r') {
      line += c;
    }
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == ';')) line.pop_back();
  return line;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// "1234_[4-6%2]" (array tasks not yet started, as squeue and sacct fold them) -> 1234_4 .. 1234_6.
std::vector<std::string> unfold_array_ids(const std::string& id) {
  static const std::regex folded(R"((\d+)_\[([0-9,\-]+)(%\d+)?\])");
  std::smatch match;
  if (!std::regex_match(id, match, folded)) return {id};
  std::vector<std::string> ids;
  for (const auto& range : split(match[2].str(), ',')) {
    const auto dash = range.find('-');
    const int first = std::stoi(range.substr(0, dash));
    const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
    for (int index = first; index <= last && ids.size() < 100000; ++index) {
      ids.push_back(fmt::format("{}_{}", match[1].str(), index));
    }
  }
  return ids;
}

}  // namespace

double sbatch_timeout_s() {
  const char* text = std::getenv("HARNESS_SBATCH_TIMEOUT_S");
  if (text == nullptr) return 60;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  return end != text && *end == '\0' && seconds > 0 && seconds <= 3600 ? seconds : 60;
}

bool is_final_state(const std::string& state) {
  static const std::vector<std::string> running = {
      "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_FED",
      "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"};
  return !state.empty() && std::find(running.begin(), running.end(), state) == running.end();
}

std::vector<SchedulerJob> parse_squeue(const std::string& text) {
  std::vector<SchedulerJob> jobs;
  for (const auto& line : split(text, '\n')) {
    const auto fields = split(trimmed(line), '|');
    if (fields.size() < 4) continue;
    for (const auto& id : unfold_array_ids(fields[0])) {
      jobs.push_back({id, fields[1], fields[2] == "None" ? "" : fields[2], fields[3]});
    }
  }
  return jobs;
}

std::vector<SchedulerJob> parse_sacct(const std::string& text) {
  std::vector<SchedulerJob> jobs;
  for (const auto& line : split(text, '\n')) {
    const auto fields = split(trimmed(line), '|');
    if (fields.size() < 3) continue;
    // "CANCELLED by 1000": the state is the first word.
    const std::string state = split(fields[1], ' ').empty() ? "" : split(fields[1], ' ')[0];
    for (const auto& id : unfold_array_ids(fields[0])) {
      jobs.push_back({id, state, "", fields[2] == "None assigned" ? "" : fields[2]});
    }
  }
  return jobs;
}

double parse_slurm_time_s(const std::string& text) {
  static const std::regex time(R"((?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?)");
  std::smatch match;
  const std::string value = trimmed(text);
  if (!std::regex_match(value, match, time)) return 0;
  const auto number = [&](int group) { return match[group].matched ? std::stod(match[group].str()) : 0.0; };
  const double days = number(1);
  // "M", "M:S", "H:M:S", and with days "D-H", "D-H:M", "D-H:M:S".
  if (match[1].matched) return days * 86400 + number(2) * 3600 + number(3) * 60 + number(4);
  if (match[4].matched) return number(2) * 3600 + number(3) * 60 + number(4);
  if (match[3].matched) return number(2) * 60 + number(3);
  return number(2) * 60;
}

void parse_sinfo(const std::string& text, const std::string& partition, ClusterConfig& config) {
  for (const auto& line : split(text, '\n')) {
    const auto fields = split(trimmed(line), '|');
    if (fields.size() < 3) continue;
    // Without --partition sinfo lists them all; the default one ends in "*".
    if (partition.empty() && (fields[2].empty() || fields[2].back() != '*')) continue;
    try {
      // "2", or "2+" when the nodes differ (the fewest, then a plus).
      config.cpus_per_node = std::stoi(fields[0]);
    } catch (const std::exception&) {
      // Unknown: no automatic --overcommit.
    }
    config.max_time_s = parse_slurm_time_s(fields[1]);
    return;
  }
}

ClusterConfig parse_config(const std::string& text) {
  ClusterConfig config;
  for (const auto& line : split(text, '\n')) {
    const auto equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = trimmed(line.substr(0, equals));
    const std::string value = trimmed(line.substr(equals + 1));
    try {
      if (key == "MaxArraySize") config.max_array_size = std::max(1, std::stoi(value));
      // "300 sec"
      if (key == "MinJobAge") config.min_job_age_s = std::stod(value);
    } catch (const std::exception&) {
      // A value this SLURM writes differently: keep the default.
    }
    if (key == "AccountingStorageType") config.accounting = value.find("/none") == std::string::npos;
  }
  return config;
}

SlurmCommands::SlurmCommands(std::string scratch_dir) : scratch_dir_(std::move(scratch_dir)) {}

SlurmCommands::Output SlurmCommands::run(const std::vector<std::string>& argv, double timeout_s) const {
  ProcessRequest request;
  request.argv = argv;
  // A name nobody can have made beforehand (mkstemp: created here, 0600): in a temporary folder
  // shared with other users, a file planted under a predictable name would be appended to and its
  // lines read as squeue's.
  request.log_path = fmt::format("{}/.harness-{}-XXXXXX", scratch_dir_, argv[0]);
  const int fd = ::mkstemp(request.log_path.data());
  if (fd < 0) {
    throw LaunchError(fmt::format("{}: cannot create a file for {}'s output: {}", request.log_path, argv[0],
                                  std::strerror(errno)));
  }
  ::close(fd);
  request.timeout_s = timeout_s;
  // Cancelling jobs after Ctrl-C is exactly when these must still run.
  request.stop_on_interrupt = false;
  // Dates and states in the C locale's words.
  request.environment = {{"LC_ALL", "C"}, {"SLURM_TIME_FORMAT", "standard"}};
  // SLURM's input variables beat the job script's #SBATCH lines: a stray SBATCH_JOB_NAME would
  // hide every job from the sweep's query, SLURM_EXPORT_ENV=NONE take the ranks' environment,
  // SLURM_CLUSTERS send the commands to another cluster. The launcher's options say these.
  request.removed_environment = {"SBATCH_*", "SLURM_EXPORT_ENV", "SLURM_CLUSTERS"};
  // squeue and sacct of a sweep of thousands of jobs print megabytes.
  const CapturedRun captured = run_captured(std::move(request), std::size_t{64} << 20);
  Output output;
  output.text = captured.output;
  output.exit_code = captured.outcome.exited ? captured.outcome.exit_code : -1;
  output.timed_out = captured.outcome.timed_out;
  if (captured.outcome.timed_out) output.text += fmt::format("\n(no answer within {} s)", timeout_s);
  return output;
}

ClusterConfig SlurmCommands::read_config(const std::string& partition) const {
  const Output output = run({"scontrol", "show", "config"});
  if (output.exit_code != 0) {
    throw LaunchError(fmt::format("scontrol show config failed (is the SLURM controller up?): {}",
                                  shortened(one_line(trimmed(output.text)), 300)));
  }
  ClusterConfig config = parse_config(output.text);
  // A configured accounting storage must also answer: detected, not assumed.
  if (config.accounting) {
    config.accounting = run({"sacct", "--noheader", "--parsable2", "--allocations", "--jobs=1"}).exit_code == 0;
  }
  std::vector<std::string> sinfo = {"sinfo", "--noheader", "--format=%c|%l|%P"};
  if (!partition.empty()) sinfo.push_back("--partition=" + partition);
  const Output partitions = run(sinfo);
  if (partitions.exit_code == 0) parse_sinfo(partitions.text, partition, config);
  return config;
}

bool SlurmCommands::srun_offers_mpi(std::string_view plugin) const {
  const Output output = run({"srun", "--mpi=list"});
  return output.exit_code == 0 && output.text.find(plugin) != std::string::npos;
}

std::string SlurmCommands::submit(const std::vector<std::string>& arguments, const std::string& script) const {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  argv.push_back(script);
  const double timeout_s = sbatch_timeout_s();
  const Output output = run(argv, timeout_s);
  if (output.timed_out) {
    throw SbatchTimedOut(fmt::format("sbatch {} gave no answer within {:g} s (HARNESS_SBATCH_TIMEOUT_S)", script,
                                     timeout_s));
  }
  // "1234" or "1234;cluster"; sbatch may print warnings on lines before it.
  static const std::regex job_id(R"((^|\n)(\d+)(;\S*)?\s*$)");
  std::smatch match;
  if (output.exit_code != 0 || !std::regex_search(output.text, match, job_id)) {
    throw LaunchError(fmt::format("sbatch {} failed: {}", script,
                                  shortened(trimmed(output.text).empty() ? "no output" : one_line(trimmed(output.text)), 500)));
  }
  if (match[3].length() > 1) throw_queued_elsewhere(script, match[2].str(), match[3].str().substr(1));
  return match[2].str();
}

void SlurmCommands::throw_queued_elsewhere(const std::string& script, const std::string& id,
                                           const std::string& cluster) const {
  // squeue and scancel ask the cluster the harness runs on: a job on another one would be judged
  // lost while it runs on, followed by no one.
  const Output cancelled = run({"scancel", "--clusters=" + cluster, id});
  throw LaunchError(fmt::format(
      "sbatch {}: job {} was queued on cluster {}, where the harness cannot follow it ({}): expected a job id "
      "without \";cluster\" (no --clusters, SBATCH_CLUSTERS or SLURM_CLUSTERS)",
      script, id, cluster,
      cancelled.exit_code == 0
          ? "cancelled"
          : fmt::format("scancel --clusters={} {} failed: {}", cluster, id,
                        shortened(one_line(trimmed(cancelled.text)), 200))));
}

std::vector<SchedulerJob> SlurmCommands::query(const std::string& job_name, bool accounting, double since) {
  ++queries_;
  if (accounting) {
    // sacct reads relative times in seconds ("now-600"); a minute more for clocks that differ.
    const auto seconds_back = static_cast<long long>(std::max(0.0, wall_clock_s() - since)) + 60;
    const Output output = run({"sacct", "--noheader", "--parsable2", "--allocations",
                               "--name=" + job_name, fmt::format("--starttime=now-{}", seconds_back),
                               "--format=JobID,State,NodeList"});
    if (output.exit_code == 0) return parse_sacct(output.text);
    throw LaunchError(fmt::format("sacct failed: {}", shortened(one_line(trimmed(output.text)), 300)));
  }
  const Output output = run({"squeue", "--noheader", "--me", "--array", "--states=all",
                             "--name=" + job_name, "--format=%i|%T|%r|%N"});
  if (output.exit_code != 0) {
    throw LaunchError(fmt::format("squeue failed: {}", shortened(one_line(trimmed(output.text)), 300)));
  }
  return parse_squeue(output.text);
}

std::string SlurmCommands::find_by_comment(const std::string& job_name, const std::string& comment) const {
  const Output output =
      // %F: an array's own id (%i would say 12_[0-3] or 12_0, which the caller extends by task).
      run({"squeue", "--noheader", "--me", "--states=all", "--name=" + job_name, "--format=%F|%k"});
  if (output.exit_code != 0) {
    throw LaunchError(fmt::format("squeue failed: {}", shortened(one_line(trimmed(output.text)), 300)));
  }
  for (const auto& line : split(output.text, '\n')) {
    const auto bar = line.find('|');
    if (bar != std::string::npos && trimmed(line.substr(bar + 1)) == comment) return trimmed(line.substr(0, bar));
  }
  return "";
}

SlurmCommands::CancelFailure SlurmCommands::cancel(const std::vector<std::string>& ids) const {
  if (ids.empty()) return {};
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), ids.begin(), ids.end());
  const Output output = run(argv);
  if (output.exit_code == 0) return {};
  const std::string words = trimmed(output.text).empty() ? "no output" : shortened(one_line(trimmed(output.text)), 300);
  // scancel names each job it failed on ("Kill job error on job id 12: ..."); a job that is
  // already gone or ending needs no cancelling. Anything else (no controller, no answer) fails all.
  static const std::regex per_job(R"(job id (\S+): ([^\n]*))");
  CancelFailure failure;
  bool named = false;
  for (std::sregex_iterator it(output.text.begin(), output.text.end(), per_job), end; it != end; ++it) {
    named = true;
    const std::string id = (*it)[1].str();
    const std::string why = (*it)[2].str();
    if (why.find("Invalid job id") != std::string::npos || why.find("already completing or completed") != std::string::npos) {
      continue;
    }
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) failure.ids.push_back(id);
  }
  if (!named || output.timed_out) failure.ids = ids;
  if (!failure.ids.empty()) failure.error = "scancel failed: " + words;
  return failure;
}

}  // namespace harness
