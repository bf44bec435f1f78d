// Every `harness ...` command written in a fenced block of the documentation still parses, as a
// user would type it from the repository root: README.md, docs/*.md and each top-level folder's
// README.md.
//
// A command is a line of a fenced block (``` ... ```) whose first word, after an optional "$ "
// prompt and NAME=value environment words, is `harness`, `./build/harness` or `build/harness`;
// a line ending in "\" goes on on the next, "&&", "||", ";" and "|" separate commands, and "#"
// starts a comment. How each is run, from the source root, with the binary under test:
//   - `run FILE ...` with --dry-run appended: the experiment file and every option validated for
//     real, nothing started (exit 0). A file under an install prefix (/opt/harness/<version>/
//     share/harness/) is the source tree's own, which the install copies;
//   - `run` with a placeholder (FILE, <date>-<time>, ...) or --build (builds are probed by running
//     them, and the docs' builds are made by the CI scripts) with --help appended instead;
//   - `plan`, `schema`, `--help` and `--version` as written (they run nothing);
//   - every other subcommand (status, cancel, plot, check, model: they read results directories
//     that a reader's own runs make) with --help appended: the subcommand must exist, and each
//     --option the command names must be one its help lists (CLI11's --help alone would not
//     look at the options).
// Every command runs with an empty PATH, so that no dry run can reach SLURM (sbatch, scontrol,
// sinfo, srun) or start mpirun: a documented dry run that needed one fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "e2e_helpers.h"

namespace harness::e2e {
namespace {

struct DocumentedCommand {
  std::string file;                                              // relative to the source root
  int line = 0;                                                  // where the command starts
  std::string text;                                              // as written (continuations joined)
  std::vector<std::pair<std::string, std::string>> environment;  // NAME=value words before it
  std::vector<std::string> arguments;                            // after the binary
  std::string problem;                                           // why it cannot be split into words ("" when it can)
};

// Shell words of `text` with single and double quotes and backslashes, up to a "#" that starts a
// word; the operators &&, ||, ;, | are words of their own. nullopt when a quote is not closed.
std::optional<std::vector<std::string>> shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  const auto end_word = [&] {
    if (in_word) words.push_back(word);
    word.clear();
    in_word = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      end_word();
    } else if (c == '#' && !in_word) {
      break;
    } else if (c == '\'') {
      const std::size_t close = text.find('\'', i + 1);
      if (close == std::string::npos) return std::nullopt;
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size()) ++j;
        word += text[j];
      }
      if (j >= text.size()) return std::nullopt;
      in_word = true;
      i = j;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ';' || c == '|' || (c == '&' && i + 1 < text.size() && text[i + 1] == '&')) {
      end_word();
      const bool doubled = c != ';' && i + 1 < text.size() && text[i + 1] == c;
      words.push_back(doubled ? std::string(2, c) : std::string(1, c));
      if (doubled) ++i;
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  return words;
}

bool is_harness(const std::string& word) {
  return word == "harness" || word == "./build/harness" || word == "build/harness";
}

bool is_environment_word(const std::string& word) {
  const std::size_t equals = word.find('=');
  if (equals == 0 || equals == std::string::npos) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(equals), [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) || c == '_' || std::isdigit(static_cast<unsigned char>(c));
  });
}

// Whether a line could hold a command at all (so that output lines, with whatever quotes they
// hold, are not split into words).
bool mentions_harness(const std::string& line) {
  for (const std::string_view name : {"./build/harness ", "build/harness ", "harness "}) {
    for (std::size_t at = line.find(name); at != std::string::npos; at = line.find(name, at + 1)) {
      if (at == 0 || std::isspace(static_cast<unsigned char>(line[at - 1]))) return true;
    }
  }
  return false;
}

std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::vector<DocumentedCommand> commands_in(const std::string& file, std::istream& in) {
  std::vector<DocumentedCommand> commands;
  bool fenced = false;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string text = trimmed(line);
    if (text.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) continue;
    const int first_line = number;
    while (!text.empty() && text.back() == '\\' && std::getline(in, line)) {
      ++number;
      text = text.substr(0, text.size() - 1) + " " + trimmed(line);
    }
    if (text.rfind("$ ", 0) == 0) text = text.substr(2);
    if (!mentions_harness(text)) continue;
    const std::optional<std::vector<std::string>> words = shell_words(text);
    if (!words) {
      if (is_harness(text.substr(0, text.find(' ')))) {
        commands.push_back({file, first_line, text, {}, {}, "a quote is not closed"});
      }
      continue;
    }
    // Each command of the line: the words between operators.
    std::vector<std::string> segment;
    const auto take = [&] {
      std::size_t i = 0;
      DocumentedCommand command{file, first_line, text, {}, {}, ""};
      for (; i < segment.size() && is_environment_word(segment[i]); ++i) {
        const std::size_t equals = segment[i].find('=');
        command.environment.emplace_back(segment[i].substr(0, equals), segment[i].substr(equals + 1));
      }
      if (i < segment.size() && is_harness(segment[i])) {
        command.arguments.assign(segment.begin() + static_cast<std::ptrdiff_t>(i) + 1, segment.end());
        commands.push_back(command);
      }
      segment.clear();
    };
    for (const std::string& word : *words) {
      if (word == "&&" || word == "||" || word == ";" || word == "|") {
        take();
      } else {
        segment.push_back(word);
      }
    }
    take();
  }
  return commands;
}

// README.md, docs/*.md and every top-level folder's README.md, relative to the source root.
std::vector<fs::path> documentation_files(const fs::path& root) {
  std::vector<fs::path> files = {"README.md"};
  for (const auto& entry : fs::directory_iterator(root / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(fs::relative(entry.path(), root));
  }
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.empty() || name[0] == '.' || name.rfind("build", 0) == 0) continue;
    if (fs::exists(entry.path() / "README.md")) files.push_back(fs::path(name) / "README.md");
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A word a reader replaces: FILE, DIR, NAME=PATH, results/x/<date>-<time>, "...".
bool is_placeholder(const std::string& word) {
  if (word.find('<') != std::string::npos || word.find("...") != std::string::npos) return true;
  return word.size() >= 3 && std::all_of(word.begin(), word.end(), [](char c) {
           return std::isupper(static_cast<unsigned char>(c)) || c == '_' || c == '=';
         });
}

// An install prefix's share/harness/ is the source tree's own files (experiments, schema).
std::string in_source_tree(const std::string& word) {
  const std::string share = "/share/harness/";
  if (word.rfind("/opt/harness/", 0) != 0) return word;
  const std::size_t at = word.find(share);
  return at == std::string::npos ? word : word.substr(at + share.size());
}

enum class Mode { kAsWritten, kDryRun, kHelp };

Mode mode_for(const std::vector<std::string>& arguments) {
  if (arguments.empty() || arguments[0].rfind("-", 0) == 0) return Mode::kAsWritten;
  const std::string& command = arguments[0];
  const bool placeholder = std::any_of(arguments.begin(), arguments.end(), is_placeholder);
  const auto has = [&](const std::string& option) {
    return std::find(arguments.begin(), arguments.end(), option) != arguments.end();
  };
  if (command == "run") {
    if (placeholder || has("--build") || has("--help")) return Mode::kHelp;
    return has("--dry-run") ? Mode::kAsWritten : Mode::kDryRun;
  }
  if ((command == "plan" || command == "schema") && !placeholder) return Mode::kAsWritten;
  return Mode::kHelp;
}

// The option names (--name) a command gives, without values.
std::vector<std::string> options_of(const std::vector<std::string>& arguments) {
  std::vector<std::string> options;
  for (const std::string& word : arguments) {
    if (word.rfind("--", 0) == 0 && word.size() > 2) options.push_back(word.substr(0, word.find('=')));
  }
  return options;
}

// Whether CLI11's help text lists `option` ("  --out TEXT", "  -h,--help").
bool help_lists(const std::string& help, const std::string& option) {
  std::istringstream lines(help);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string text = trimmed(line);
    for (std::size_t at = text.find(option); at != std::string::npos; at = text.find(option, at + 1)) {
      const bool starts = at == 0 || text[at - 1] == ',';
      const std::size_t end = at + option.size();
      const bool ends = end == text.size() || text[end] == ' ' || text[end] == ',';
      if (starts && ends && (at == 0 || text.rfind('-', 0) == 0)) return true;
    }
  }
  return false;
}

std::string joined_words(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

TEST(Docs, CommandsAreReadFromFencedBlocksAsAShellWould) {
  std::istringstream text(
      "./build/harness run outside.json\n"
      "```sh\n"
      "# ./build/harness run in-a-comment.json\n"
      "bash .ci/install-deps && cmake --build build && ./build/harness run a.json  # the first\n"
      "$ ./build/harness check results/x/new --against '{\"build\": \"base\"}'\n"
      "harness: experiment \"speedup\", 18 point(s), results in results/speedup/<date>-<time>\n"
      "GLOO_SOCKET_IFNAME=eth0 harness run b.json \\\n"
      "    --launcher slurm\n"
      "```\n"
      "harness run after.json\n");
  const std::vector<DocumentedCommand> commands = commands_in("x.md", text);
  ASSERT_EQ(commands.size(), 3U);
  EXPECT_EQ(commands[0].line, 4);
  EXPECT_EQ(commands[0].arguments, (std::vector<std::string>{"run", "a.json"}));
  EXPECT_EQ(commands[1].arguments,
            (std::vector<std::string>{"check", "results/x/new", "--against", "{\"build\": \"base\"}"}));
  EXPECT_EQ(commands[2].line, 7);
  EXPECT_EQ(commands[2].arguments, (std::vector<std::string>{"run", "b.json", "--launcher", "slurm"}));
  ASSERT_EQ(commands[2].environment.size(), 1U);
  EXPECT_EQ(commands[2].environment[0].second, "eth0");
  EXPECT_EQ(mode_for(commands[0].arguments), Mode::kDryRun);
  EXPECT_EQ(mode_for(commands[1].arguments), Mode::kHelp);
  EXPECT_EQ(mode_for({"run", "experiments/x.json", "--out", "DIR"}), Mode::kHelp);
  EXPECT_EQ(mode_for({"run", "x.json", "--build", "base=build/base/build/harness"}), Mode::kHelp);
  EXPECT_EQ(mode_for({"plan", "experiments/x.json"}), Mode::kAsWritten);
  EXPECT_EQ(mode_for({"--version"}), Mode::kAsWritten);
  EXPECT_EQ(in_source_tree("/opt/harness/0.x/share/harness/experiments/speedup.json"), "experiments/speedup.json");
  EXPECT_TRUE(help_lists("Options:\n  -h,--help      Print\n  --out TEXT:DIR  results\n", "--out"));
  EXPECT_FALSE(help_lists("Options:\n  --output TEXT  results\n  see --out\n", "--out"));
}

// One documented command as the test runs it.
struct CommandRun {
  DocumentedCommand command;
  Mode mode = Mode::kAsWritten;
  std::vector<std::string> arguments;  // as run, after the binary
  fs::path log;
};

// What went wrong with `run` once it ended ("" when nothing did).
std::string judged(const CommandRun& run, const ProcessOutcome& outcome) {
  const std::string output = read_text(run.log);
  const std::string ran = "ran: harness " + joined_words(run.arguments);
  if (!outcome.ok()) return ran + ": " + outcome.describe() + "\n" + output;
  if (run.mode != Mode::kHelp) return "";
  // The subcommand exists (CLI11 answers --help after an unknown word with the top usage) and
  // lists every option the command gives.
  if (output.find("harness " + run.command.arguments[0] + " ") == std::string::npos) {
    return ran + ": no such subcommand\n" + output;
  }
  std::string problems;
  for (const std::string& option : options_of(run.command.arguments)) {
    if (!help_lists(output, option)) problems += ran + ": its help lists no " + option + "\n";
  }
  return problems;
}

TEST(Docs, EveryDocumentedHarnessCommandParses) {
  const fs::path root = HARNESS_SOURCE_DIR;
  const fs::path dir = scratch("docs");
  const fs::path empty_path = dir / "empty-path";
  fs::create_directories(empty_path);
  const auto start = std::chrono::steady_clock::now();
  std::vector<CommandRun> runs;
  for (const fs::path& file : documentation_files(root)) {
    std::ifstream in(root / file);
    for (DocumentedCommand& command : commands_in(file.string(), in)) {
      CommandRun run;
      run.command = command;
      run.arguments = command.arguments;
      std::transform(run.arguments.begin(), run.arguments.end(), run.arguments.begin(), in_source_tree);
      run.mode = mode_for(run.arguments);
      if (run.mode == Mode::kDryRun) run.arguments.push_back("--dry-run");
      if (run.mode == Mode::kHelp) run.arguments.push_back("--help");
      run.log = dir / ("command" + std::to_string(runs.size()) + ".log");
      runs.push_back(run);
    }
  }
  // A few at a time: each is mostly the binary starting.
  constexpr std::size_t kAtOnce = 4;
  std::vector<std::pair<const CommandRun*, std::unique_ptr<ChildProcess>>> running;
  const auto finish = [](const CommandRun& run, const ProcessOutcome& outcome) {
    if (const std::string problem = judged(run, outcome); !problem.empty()) {
      ADD_FAILURE() << run.command.file << ":" << run.command.line << ": " << run.command.text << "\n" << problem;
    }
  };
  for (std::size_t next = 0; next < runs.size() || !running.empty();) {
    while (next < runs.size() && running.size() < kAtOnce) {
      const CommandRun& run = runs[next++];
      if (!run.command.problem.empty()) {
        ADD_FAILURE() << run.command.file << ":" << run.command.line << ": " << run.command.text << "\n"
                      << run.command.problem;
        continue;
      }
      std::vector<std::pair<std::string, std::string>> environment = run.command.environment;
      environment.emplace_back("PATH", empty_path.string());
      ProcessRequest request = harness_request(run.arguments, run.log, environment);
      request.working_directory = root.string();
      request.timeout_s = 60;
      running.emplace_back(&run, std::make_unique<ChildProcess>(request));
    }
    std::vector<const ChildProcess*> children;
    for (const auto& [run, child] : running) children.push_back(child.get());
    if (!children.empty()) wait_for_any(children, 1.0);
    for (auto it = running.begin(); it != running.end();) {
      if (const std::optional<ProcessOutcome> outcome = it->second->poll()) {
        finish(*it->first, *outcome);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  const auto dry_runs =
      std::count_if(runs.begin(), runs.end(), [](const CommandRun& run) { return run.mode == Mode::kDryRun; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "checked " << runs.size() << " documented command(s), " << dry_runs << " as dry runs, in " << seconds
            << " s\n";
  EXPECT_GE(runs.size(), 15U) << "the docs' fenced harness commands were not found";
  EXPECT_GE(dry_runs, 5);
}

}  // namespace
}  // namespace harness::e2e
