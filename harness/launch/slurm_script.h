// SLURM job scripts, rendered from a template (slurm/job.sh.in, or the user's): the "#SBATCH"
// lines, the setup lines, and one shell function per point whose every argument is single-quoted,
// so that no value of an experiment (a data path with "$(...)", a quote, a newline) is ever read
// by the shell as code.
#pragma once

#include <string>
#include <vector>

#include "harness/launch/slurm_options.h"

namespace harness {

// One point of a job script.
struct ScriptPoint {
  std::string id;               // names its status file: <status_dir>/<id>.status
  int threads = 0;              // per rank; 0: the node's CPUs / ranks_on_node, decided in the job
  int ranks_on_node = 1;        // the most ranks one node of the point holds
  double time_limit_s = 0;
  std::string measurements_path;
  std::string log_path;
  std::vector<std::string> command;  // what starts the ranks, with the rank program's arguments
};

struct JobScript {
  SlurmMode mode = SlurmMode::kPerPoint;  // per-point (one point), array or pack
  std::vector<std::string> sbatch;        // options, each "--name[=value]", already checked
  std::vector<std::string> setup;         // shell lines, as the user wrote them
  std::string status_dir;
  std::vector<ScriptPoint> points;
  // Where this job finds, when it starts, that the harness gave up on its sbatch (no answer, no
  // job found): queued late after all, it runs nothing. "" for none.
  std::string abandoned_marker;
};

// The template's text: the user's file (`path`) or the harness's own (""). Throws ConfigError
// "<where>: ..." when the file cannot be read or lacks a placeholder or has an unknown one.
std::string load_job_template(const std::string& path, const std::string& where);

// The script. Throws Error for a sbatch option that is not of the checked form (a bug).
std::string render_job_script(const std::string& template_text, const JobScript& script);

// A shell word that the shell reads back as exactly `text` (single quotes; '\'' for a quote).
std::string shell_word(const std::string& text);

}  // namespace harness
