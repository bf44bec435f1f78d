// `harness`: command-line entry point. `harness worker ...` is the rank program that launchers
// start under mpirun (it execs a rank program beside this binary: harness-worker, or
// harness-comm-worker for comm points but gloo's); every other subcommand is for people.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "backends/registry.h"
#include "harness/check/check_metrics.h"
#include "harness/check/check_options.h"
#include "harness/cli/commands.h"
#include "harness/launch/scheduler.h"
#include "harness/launch/simulated_node.h"
#include "harness/study/schema.h"
#include "harness/study/kind.h"
#include "harness/study/settings.h"
#include "harness/common/json.h"
#include "harness/common/process.h"
#include "harness/common/text.h"
#include "harness/common/resources.h"
#include "harness/common/mpi_build.h"
#include "harness/common/version.h"
#include "workloads/registry.h"

namespace {

std::string names_help() {
  std::string text = "\nExperiment settings (keys of \"settings\" and \"sweep\"):\n";
  const harness::Json defaults = harness::to_json(harness::PointSettings{});
  for (const auto& setting : harness::setting_table()) {
    text += fmt::format("  {:<17} {} (default {})\n", setting.key, setting.help,
                        defaults[std::string(setting.key)].dump());
  }
  text += "Workloads:\n";
  for (const auto& info : harness::workload_table()) {
    text += fmt::format("  {:<12} {}\n", info.name, info.summary);
  }
  text += "Backends:\n";
  for (const auto& info : harness::backend_table()) {
    text += fmt::format("  {:<12} {}\n", info.name, info.summary);
  }
  text += "Launchers (\"launcher\": a name, or {\"name\": ..., <options>}):\n";
  for (const auto& info : harness::scheduler_table()) {
    text += fmt::format("  {:<12} {}\n", info.name, info.summary);
    if (info.options == nullptr) continue;
    for (const auto& option : info.options()) {
      text += fmt::format("    {:<15} {}\n", option.key, option.help);
    }
  }
  text += "Check metrics (harness check --threshold/--floor/--metrics; default threshold, floor):\n";
  for (const auto& metric : harness::check_metric_table()) {
    text += fmt::format("  {:<14} {} ({}, {} is better; {:g}%, {:g} {})\n", metric.name, metric.help, metric.unit,
                        metric.better == harness::Better::kLower ? "lower" : "higher", metric.threshold * 100,
                        metric.floor, metric.unit);
  }
  return text;
}

// The values of every subcommand's options, filled in by app.parse.
struct CommandOptions {
  harness::RunOptions run;
  std::string plan_path;
  std::string plan_launcher;
  std::string plot_dir;
  std::string status_dir;
  std::string cancel_dir;
  harness::CheckCommandOptions check;
  harness::ModelCommandOptions model;
};

// The subcommands that take options; "schema" is found by name.
struct Subcommands {
  CLI::App* run = nullptr;
  CLI::App* plan = nullptr;
  CLI::App* plot = nullptr;
  CLI::App* status = nullptr;
  CLI::App* cancel = nullptr;
  CLI::App* check = nullptr;
  CLI::App* model = nullptr;
};

// The rank program for `harness worker ARGS`: harness-comm-worker for the points that need no
// LibTorch (runs_without_libtorch), harness-worker for every other point, and for arguments it
// cannot read (which harness-worker then refuses in the rank's own words). The first --settings decides: the rank
// program reads the last, and harness-comm-worker refuses a point that is not its own.
const char* rank_program_for(char** argv) {
  for (int i = 2; argv[i] != nullptr && argv[i + 1] != nullptr; ++i) {
    if (std::strcmp(argv[i], "--settings") != 0) continue;
    const harness::Json settings = harness::Json::parse(argv[i + 1], nullptr, /*allow_exceptions=*/false);
    const auto text = [&](const char* key) {
      if (!settings.is_object()) return std::string();
      const auto found = settings.find(key);
      return found != settings.end() && found->is_string() ? found->get<std::string>() : std::string();
    };
    return harness::runs_without_libtorch(text("kind"), text("backend")) ? "harness-comm-worker" : "harness-worker";
  }
  return "harness-worker";
}

// `harness worker ARGS` runs the rank program (rank_program_for) from this binary's folder with the
// same arguments: an executable of its own, so that no other command loads LibTorch
// (harness/rank/worker_program.cpp). argv[0] stays, so that ps and /proc still show the ranks as
// `harness worker ...`. Returns only when it cannot be started.
int exec_rank_program(char** argv) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const char* program = rank_program_for(argv);
  const std::string worker = (error ? std::filesystem::path(program) : self.parent_path() / program).string();
  execv(worker.c_str(), argv);
  const std::string why = fmt::format("cannot start the rank program {}: {} (it is built and installed beside harness)",
                                      worker, std::strerror(errno));
  // As the rank program says its last words, so that the point's reason quotes them
  // (harness/launch/failure_reason.cpp).
  const char* rank = nullptr;
  // Open MPI's, PMIx's, hydra's (MPICH and its family) and SLURM's names for it.
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (rank == nullptr) rank = std::getenv(variable);
  }
  std::cerr << (rank != nullptr ? fmt::format("harness worker (rank {}): {}\n", rank, why)
                                : fmt::format("harness: {}\n", why));
  return harness::kExitFailure;
}

// main's steps, defined below it.
Subcommands add_subcommands(CLI::App& app, CommandOptions& options);
int run_subcommand(const CLI::App& app, const Subcommands& subcommands, CommandOptions& options,
                   int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  // The rank program, with the arguments as given: it runs under mpirun, before anything else.
  if (argc >= 2 && std::strcmp(argv[1], "worker") == 0) return exec_rank_program(argv);
  // mpirun's remote-shell agent for simulated hosts (the local launcher's "simulate_hosts").
  if (argc >= 2 && std::strcmp(argv[1], "simulated-node") == 0) {
    return harness::simulated_node_main(argc - 2, argv + 2);
  }

  // A reader that goes away (`| head`, a tee ended by Ctrl-C) is no reason to stop measuring, nor
  // to die between an sbatch and the ledger line that remembers its job.
  harness::keep_running_when_output_closes();

  // CLI11 would call an unknown command an unexpected argument; name it.
  const std::vector<std::string> commands = {"run", "plan", "plot", "status", "cancel", "check", "model", "schema"};
  if (argc >= 2 && argv[1][0] != '-' &&
      std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    std::cerr << fmt::format("harness: unknown command {} (expected one of: run, plan, plot, status, cancel, check, model, "
                             "schema; "
                             "see harness --help)\n",
                             harness::describe_text(argv[1]));
    return harness::kExitBadInput;
  }

  CLI::App app{"harness: scaling studies of data-parallel training over MPI"};
  // The first line is what `builds` probes parse; the second names the MPI the build is for (the
  // probes read its family: each build's points start with its own launcher); the third says where
  // run-time files are read.
  app.set_version_flag("--version", fmt::format("harness {} ({})\n{}\n{}", harness::kHarnessVersion,
                                                harness::git_commit(), harness::describe_mpi_build(),
                                                harness::describe_resources(harness::resource_directory())));
  app.require_subcommand(1);
  app.footer(names_help());

  CommandOptions options;
  const Subcommands subcommands = add_subcommands(app, options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    std::cerr << "harness: " << error.what() << " (see harness --help)\n";
    return harness::kExitBadInput;
  }
  return run_subcommand(app, subcommands, options, argc, argv);
}

namespace {

CLI::Validator out_dir_validator() {
  return CLI::Validator(
      [](const std::string& directory) {
        // Empty would silently mean the default directory; "--out --fresh" would make a
        // directory named "--fresh" of what was meant as the next option.
        if (directory.empty()) return std::string("expected a directory, got an empty string");
        if (directory[0] == '-') {
          return fmt::format("expected a directory, got the option-like \"{}\" (write ./{} for a directory "
                             "so named)",
                             directory, directory);
        }
        return std::string();
      },
      "DIR");
}

CLI::App* add_run_command(CLI::App& app, harness::RunOptions& run_options) {
  auto* run = app.add_subcommand("run", "Run every point of an experiment file, then write "
                                        "summary.csv and plots");
  run->add_option("FILE", run_options.experiment_path, "experiment file (JSON)")->required();
  run->add_option("--out", run_options.out_dir,
                  "results directory (default: results/<experiment name>/<timestamp>); points "
                  "completed there before are kept, failed and missing ones run")
      ->check(out_dir_validator());
  auto* fresh = run->add_flag("--fresh", run_options.fresh, "run every point again, even completed ones");
  run->add_option("--launcher", run_options.changes.launcher,
                  "run through this launcher instead of the experiment's (its options there are "
                  "kept when it names the same one)");
  auto* retry_failed = run->add_flag("--retry-failed", run_options.retry_failed,
                "resume, running again only failed, lost, node-failed, preempted and missing points "
                "(keep timed-out, out-of-memory and cancelled ones; the run exits 1 while any is left)");
  fresh->excludes(retry_failed);
  run->add_option("--set", run_options.changes.settings,
                  "KEY=VALUE: fix a setting for every point (repeatable; VALUE as JSON, else text), e.g. "
                  "--set inject_comm_delay_us=100; not a swept one")
      ->allow_extra_args(false);
  run->add_option("--sweep", run_options.changes.sweeps,
                  "JSON: sweep more settings, as the experiment's \"sweep\" (lists or \"zip\" groups), e.g. "
                  "'{\"zip\": {\"build\": [\"base\", \"head\"], \"inject_comm_delay_us\": [0, 20]}}' (repeatable; "
                  "not a key the experiment sweeps)")
      ->allow_extra_args(false);
  run->add_option("--build", run_options.changes.builds,
                  "NAME=PATH: a harness build whose rank program points can run (repeatable); the setting "
                  "\"build\" picks it per point, and is swept over every build unless the experiment sets it, "
                  "e.g. --build base=build-base/harness --build head=build/harness")
      ->allow_extra_args(false);
  run->add_flag_callback(
      "--timeline", [&run_options] { run_options.changes.settings.push_back("timeline=true"); },
      "write every point's timeline (logs/<id>.trace.json, a Chrome trace: open it in https://ui.perfetto.dev); "
      "the same as --set timeline=true");
  run->add_flag("--detach", run_options.detach,
                "submit the jobs and return (a cluster launcher); follow them with harness status DIR");
  run->add_flag("--dry-run", run_options.dry_run,
                "validate and print every point's command, the counts and an estimate; run "
                "nothing, create no results directory");
  return run;
}

// plan, plot, status and cancel: each takes a file or directory and little else.
void add_plan_and_directory_commands(CLI::App& app, CommandOptions& options, Subcommands& subcommands) {
  auto* plan = app.add_subcommand("plan", "Print the points an experiment expands to and their "
                                          "commands, without running anything (run --dry-run)");
  plan->add_option("FILE", options.plan_path, "experiment file (JSON)")->required();
  plan->add_option("--launcher", options.plan_launcher, "as run --launcher");
  subcommands.plan = plan;

  auto* plot = app.add_subcommand("plot", "Rebuild summary.csv, stats.csv (training), every plot and report.html "
                                          "of a results directory, without running anything");
  plot->add_option("DIR", options.plot_dir, "results directory (holds experiment.json and points/)")->required();
  subcommands.plot = plot;

  auto* status = app.add_subcommand("status", "Say where every point of a results directory stands, "
                                              "collect the records of jobs that ended, and rebuild the "
                                              "summary and plots once all are in (exit 3: not yet)");
  status->add_option("DIR", options.status_dir, "results directory")->required();
  subcommands.status = status;
  auto* cancel = app.add_subcommand("cancel", "Cancel the jobs of a results directory still in flight "
                                              "(their points run again on resume)");
  cancel->add_option("DIR", options.cancel_dir, "results directory")->required();
  subcommands.cancel = cancel;
}

CLI::App* add_check_command(CLI::App& app, harness::CheckCommandOptions& check_options) {
  auto* check = app.add_subcommand(
      "check", "Compare a results directory with a baseline run and/or each configuration with its counterpart "
               "of the same run; exit 0 pass, 1 regression (or a point that newly fails), 2 bad input, 3 inconclusive "
               "(--strict), 4 missing, failing on both sides or not comparable (--strict)");
  check->add_option("DIR", check_options.current_dir, "results directory to check")->required();
  check->add_option("--baseline", check_options.baseline_dir, "results directory to compare with");
  check->add_option("--against", check_options.against,
                    "JSON object of setting values: compare each configuration with the one of the same run "
                    "that has them, e.g. '{\"backend\": \"allreduce\"}' (default: the experiment's check.against)");
  check->add_flag("--strict", check_options.strict,
                  "exit 3 on inconclusive rows and 4 on missing, failing or not comparable ones");
  check->add_flag("--allow-other-machine", check_options.allow_other_machine,
                  "compare timings of records from different machines (host, CPU model, CPUs or memory differ) "
                  "instead of calling them not comparable");
  check->add_flag("--allow-other-mpi", check_options.allow_other_mpi,
                  "compare timings of records of different MPI libraries (builds against two MPIs, docs/mpi.md) "
                  "instead of calling them not comparable");
  check->add_option("--threshold", check_options.thresholds,
                    "METRIC=CHANGE: relative change that may regress, 0.15 or 15% (repeatable)")
      ->allow_extra_args(false);
  check->add_option("--floor", check_options.floors,
                    "METRIC=VALUE: absolute differences below VALUE (the metric's unit) pass (repeatable)")
      ->allow_extra_args(false);
  check->add_option("--metrics", check_options.metrics, "compare only these metrics, comma-separated");
  check->add_option("--expect-commit", check_options.expect_commits,
                    "BUILD=COMMIT: every record of build BUILD must name COMMIT (7-40 hex digits), else exit 2 "
                    "(repeatable)")
      ->allow_extra_args(false);
  check->add_option("--json", check_options.json_path, "write the verdicts as JSON to FILE");
  check->add_option("--junit", check_options.junit_path, "write JUnit XML to FILE (a test case per point and metric)");
  check->add_option("--markdown", check_options.markdown_path, "write a markdown summary to FILE (for a CI job page)");
  return check;
}

CLI::App* add_model_command(CLI::App& app, harness::ModelCommandOptions& model_options) {
  auto* model = app.add_subcommand(
      "model", "Fit the cost model (latency, time per byte moved and reduced) to a comm benchmark's results; "
               "with --predict, predict a training run's communication, speedup and efficiency at any ranks");
  model->add_option("COMM_RUN", model_options.comm_dir, "results directory of a comm benchmark")->required();
  model->add_option("--predict", model_options.train_dir, "results directory of a training run to predict");
  model->add_option("--ranks", model_options.ranks, "rank counts to predict, comma-separated (default 1,2,4,...,1024)");
  return model;
}

// The subcommands in the order --help lists them.
Subcommands add_subcommands(CLI::App& app, CommandOptions& options) {
  Subcommands subcommands;
  subcommands.run = add_run_command(app, options.run);
  add_plan_and_directory_commands(app, options, subcommands);
  subcommands.check = add_check_command(app, options.check);
  subcommands.model = add_model_command(app, options.model);
  app.add_subcommand("schema", "Print the JSON Schema of experiment files (experiments/schema.json)");
  return subcommands;
}

int schema_command() {
  std::vector<std::string> workloads;
  for (const auto& info : harness::workload_table()) workloads.emplace_back(info.name);
  std::cout << harness::experiment_schema(workloads, harness::backend_names(),
                                          harness::launcher_schema(), harness::check_block_schema())
                   .dump(2) << "\n";
  return harness::kExitOk;
}

// Runs the subcommand that app.parse found.
int run_subcommand(const CLI::App& app, const Subcommands& subcommands, CommandOptions& options,
                   int argc, char** argv) {
  try {
    if (*subcommands.run) {
      options.run.command_line.assign(argv, argv + argc);
      return harness::run_command(options.run);
    }
    if (*subcommands.plot) return harness::plot_command(options.plot_dir);
    const std::vector<std::string> command_line(argv, argv + argc);
    if (*subcommands.status) return harness::status_command(options.status_dir, command_line);
    if (*subcommands.cancel) return harness::cancel_command(options.cancel_dir, command_line);
    if (*subcommands.check) return harness::check_command(options.check);
    if (*subcommands.model) return harness::model_command(options.model);
    if (app.got_subcommand("schema")) return schema_command();
    harness::StudyChanges plan_changes;
    plan_changes.launcher = options.plan_launcher;
    return harness::plan_command(options.plan_path, "", plan_changes);
  } catch (const std::exception& error) {
    // The subcommands report their own errors; this is the last line of defence (out of memory,
    // a filesystem error), so that nothing ends in std::terminate.
    std::cerr << "harness: " << error.what() << "\n";
    return harness::kExitFailure;
  }
}

}  // namespace
