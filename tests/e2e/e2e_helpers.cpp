#include "e2e_helpers.h"

#include <fstream>
#include <iterator>

namespace harness::e2e {

fs::path scratch(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("harness_e2e_" + name);
  std::error_code error;
  fs::remove_all(path, error);
  if (error) {
    // A test killed while a file of its was immutable (chattr +i, which some tests set) left it so.
    ProcessRequest request;
    request.argv = {"chattr", "-R", "-i", path.string()};
    run_process(request);
    fs::remove_all(path);
  }
  fs::create_directories(path);
  return path;
}

ProcessRequest harness_request(const std::vector<std::string>& arguments, const fs::path& log,
                               const std::vector<std::pair<std::string, std::string>>& environment) {
  ProcessRequest request;
  request.environment = environment;
  request.argv = {HARNESS_BINARY};
  request.argv.insert(request.argv.end(), arguments.begin(), arguments.end());
  request.log_path = log.string();
  request.working_directory = log.parent_path().string();
  request.timeout_s = 300;
  return request;
}

HarnessRun run_harness(const std::vector<std::string>& arguments, const fs::path& log,
                       const std::vector<std::pair<std::string, std::string>>& environment) {
  HarnessRun run;
  run.outcome = run_process(harness_request(arguments, log, environment));
  run.output = tail_lines(log.string(), 1000);
  return run;
}

fs::path copy_harness_build(const fs::path& directory) {
  fs::create_directories(directory);
  const fs::path harness = fs::path(HARNESS_BINARY);
  fs::copy_file(harness, directory / "harness");
  for (const char* program : {"harness-worker", "harness-comm-worker"}) {
    fs::copy_file(harness.parent_path() / program, directory / program);
  }
  return directory / "harness";
}

fs::path write_experiment(const fs::path& directory, const std::string& text) {
  const fs::path path = directory / "experiment.json";
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& path) {
  std::ifstream in(path);
  // A missing table is a failure of its own, not no rows: loops over the rows would assert nothing.
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> columns = csv_fields(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = csv_fields(line);
    EXPECT_EQ(fields.size(), columns.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < columns.size() && i < fields.size(); ++i) row[columns[i]] = fields[i];
    rows.push_back(row);
  }
  return rows;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

std::string explained(const HarnessRun& run) {
  constexpr std::size_t kLogTailLines = 60;
  std::string text = joined(run.output);
  const std::string marker = "log: ";
  for (const auto& line : run.output) {
    const std::size_t at = line.find(marker);
    if (at == std::string::npos || line.find_first_not_of(' ') != at) continue;
    const fs::path log = line.substr(at + marker.size());
    std::vector<std::string> lines;
    std::ifstream in(log);
    for (std::string log_line; std::getline(in, log_line);) lines.push_back(log_line);
    const std::size_t first = lines.size() > kLogTailLines ? lines.size() - kLogTailLines : 0;
    text += "--- last lines of " + log.string() + " ---\n";
    for (std::size_t i = first; i < lines.size(); ++i) text += lines[i] + "\n";
  }
  return text;
}

pid_t find_rank_process(int rank) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string command = read_text(entry.path() / "cmdline");
    if (command.find(std::string(HARNESS_BINARY) + '\0' + "worker") == std::string::npos) continue;
    const std::string environment = read_text(entry.path() / "environ");
    if (environment.find("OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0') != std::string::npos) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

}  // namespace harness::e2e
