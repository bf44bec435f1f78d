#include "harness/launch/slurm_script.h"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/launch/slurm_job_template.h"

namespace harness {
namespace {

constexpr const char* kPlaceholders[] = {"sbatch", "setup", "status_dir", "points", "run"};
const std::regex kPlaceholder(R"(\{\{([A-Za-z_]*)\}\})");
// What a reader takes for a placeholder but rendering would leave as it is: "{{ points }}".
const std::regex kSpacedPlaceholder(R"(\{\{\s*[A-Za-z_]*\s*\}\})");

// Which of the script's points this job runs.
std::string points_to_run(const JobScript& script) {
  switch (script.mode) {
    case SlurmMode::kArray:
      return "# A job array: each task runs the point of its index.\n"
             "\"point_${SLURM_ARRAY_TASK_ID:?this script is a job array}\"";
    case SlurmMode::kPack: {
      std::vector<std::string> names;
      for (std::size_t i = 0; i < script.points.size(); ++i) names.push_back(fmt::format("point_{}", i));
      return fmt::format("# One allocation, its points one after another as job steps.\n"
                         "for point in {}; do \"$point\"; done",
                         fmt::join(names, " "));
    }
    default:
      return "point_0";
  }
}

// What `run` says: which of the script's points this job runs (none when the harness gave up on
// its sbatch).
std::string run_lines(const JobScript& script) {
  const std::string abandoned =
      script.abandoned_marker.empty()
          ? ""
          : fmt::format("# Queued after the harness gave up on this job's sbatch: it may have run the points again.\n"
                        "if [[ -e {0} ]]; then echo \"harness gave up on this job's sbatch, so it runs nothing: \"{0} >&2; "
                        "exit 0; fi\n",
                        shell_word(script.abandoned_marker));
  return abandoned + points_to_run(script);
}

std::string point_functions(const JobScript& script) {
  std::string text;
  for (std::size_t i = 0; i < script.points.size(); ++i) {
    const ScriptPoint& point = script.points[i];
    std::vector<std::string> command;
    for (const auto& argument : point.command) command.push_back(shell_word(argument));
    text += fmt::format("point_{}() {{\n  run_point {} {} {} {} {} {} -- \\\n    {}\n}}\n", i, shell_word(point.id),
                        point.threads, std::max(1, point.ranks_on_node), point.time_limit_s,
                        shell_word(point.measurements_path), shell_word(point.log_path),
                        fmt::join(command, " "));
  }
  if (!text.empty()) text.pop_back();
  return text;
}

std::string sbatch_lines(const std::vector<std::string>& options) {
  static const std::regex kOption(R"(--[a-z][a-z0-9\-]*(=[^\s'"`$;\\]+)?)");
  std::string text;
  for (const auto& option : options) {
    // The options were checked when read; a line break here would end the directives.
    if (!std::regex_match(option, kOption)) {
      throw Error(fmt::format("job script: sbatch option {} is not of the form --name[=value]", option));
    }
    text += "#SBATCH " + option + "\n";
  }
  if (!text.empty()) text.pop_back();
  return text;
}

// sbatch reads #SBATCH lines only up to the script's first command: {{sbatch}} must stand on a
// line of its own with nothing but comments and blank lines before it (the shebang is one).
void check_directives_come_first(const std::string& text, const std::string& where) {
  constexpr const char* kExpected = "expected {{sbatch}} alone on its line, after only comments and blank lines";
  const std::string::size_type at = text.find("{{sbatch}}");  // there, once: the placeholders were counted
  const std::string::size_type line_start = at == 0 ? 0 : text.rfind('\n', at - 1) + 1;
  const std::string::size_type line_end = text.find('\n', at);
  const std::string line = text.substr(line_start, line_end == std::string::npos ? line_end : line_end - line_start);
  if (line != "{{sbatch}}" && line != "{{sbatch}}\r") {
    throw ConfigError(fmt::format("{}: {{{{sbatch}}}} shares its line (\"{}\"), which would spoil an #SBATCH line: {}",
                                  where, line, kExpected));
  }
  std::istringstream lines(text.substr(0, line_start));
  std::string before;
  for (int number = 1; std::getline(lines, before); ++number) {
    const std::string::size_type first = before.find_first_not_of(" \t\r");
    if (first != std::string::npos && before[first] != '#') {
      throw ConfigError(fmt::format("{}:{}: \"{}\" comes before {{{{sbatch}}}}, and sbatch reads no #SBATCH line "
                                    "after the first command: {}",
                                    where, number, before, kExpected));
    }
  }
}

}  // namespace

std::string shell_word(const std::string& text) {
  std::string word = "'";
  for (const char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

std::string load_job_template(const std::string& path, const std::string& where) {
  if (path.empty()) return kSlurmJobTemplate;
  std::string text;
  try {
    text = read_text_file(path, {"job script template", "a job script template (text)", 1 << 20, 0});
  } catch (const ConfigError& error) {
    throw ConfigError(fmt::format("{}: {}", where, error.what()));
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kSpacedPlaceholder); it != std::sregex_iterator();
       ++it) {
    if (!std::regex_match(it->str(), kPlaceholder)) {
      throw ConfigError(fmt::format("{}: {}: placeholder {} has spaces inside its braces and would stay as it is: "
                                    "expected it without spaces, such as {{{{points}}}}",
                                    where, path, it->str()));
    }
  }
  std::map<std::string, int> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPlaceholder); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1].str();
    if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) == std::end(kPlaceholders)) {
      throw ConfigError(fmt::format("{}: {}: unknown placeholder {{{{{}}}}} (expected {{{{{}}}}})", where,
                                    path, name, fmt::join(kPlaceholders, "}}, {{")));
    }
    ++found[name];
  }
  for (const char* name : kPlaceholders) {
    if (found[name] != 1) {
      throw ConfigError(fmt::format("{}: {}: expected the placeholder {{{{{}}}}} once, found it {} time(s)",
                                    where, path, name, found[name]));
    }
  }
  check_directives_come_first(text, fmt::format("{}: {}", where, path));
  return text;
}

std::string render_job_script(const std::string& template_text, const JobScript& script) {
  const std::map<std::string, std::string> values = {
      {"sbatch", sbatch_lines(script.sbatch)},
      {"setup", script.setup.empty() ? "# (none)" : fmt::format("{}", fmt::join(script.setup, "\n"))},
      {"status_dir", shell_word(script.status_dir)},
      {"points", point_functions(script)},
      {"run", run_lines(script)},
  };
  std::string text;
  auto last = template_text.cbegin();
  for (auto it = std::sregex_iterator(template_text.begin(), template_text.end(), kPlaceholder);
       it != std::sregex_iterator(); ++it) {
    text.append(last, template_text.cbegin() + it->position());
    const auto value = values.find((*it)[1].str());
    text += value != values.end() ? value->second : it->str();
    last = template_text.cbegin() + it->position() + it->length();
  }
  text.append(last, template_text.cend());
  return text;
}

}  // namespace harness
