#include "harness/launch/slurm_options.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/option_rows.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

// SLURM's names (partitions, accounts, QOS) are words; a comma separates several partitions.
constexpr const char* kNameExpected = "a SLURM name (letters, digits, _ . -; commas between several)";
const std::regex kName(R"([A-Za-z0-9_.\-]+(,[A-Za-z0-9_.\-]+)*)");
const std::regex kSrunMpi(R"([A-Za-z0-9_]+)");
// Node features joined with SLURM's operators: "skylake&ib", "[rack1|rack2]", "gpu*2".
constexpr const char* kConstraintExpected =
    "node features with SLURM's operators (letters, digits, _ . - & | * ! [ ] ( ) , :)";
const std::regex kConstraint(R"([A-Za-z0-9_.\-&|*!\[\](),:]+)");
// One sbatch option, written as on its command line: "--mail-type=END", "--requeue".
constexpr const char* kSbatchExpected =
    "an sbatch option such as \"--mail-type=END\" (--name[=value]; the value letters, digits and "
    "_ . , : = @ / + % -)";
const std::regex kSbatchOption(R"(--[a-z][a-z0-9\-]*(=[A-Za-z0-9_.,:=@/+%\-]+)?)");

// Options the harness sets on every job itself, and why a user's copy would break it: sbatch
// keeps the last of two, so an extra "--job-name" would hide the job from the sweep's query.
struct OwnedOption {
  std::string_view name;
  char short_name;  // 0: none
  std::string_view why;
};
constexpr OwnedOption kOwnedOptions[] = {
    {"job-name", 'J', "the harness names every job harness-<sweep id> and finds them by that name"},
    {"comment", 0, "the harness lists each job's points in its comment"},
    {"array", 'a', "the harness makes the job arrays itself (option \"mode\")"},
    {"time", 't', "the harness asks for each job's time from its points' limits (option \"time_limit_s\")"},
    {"output", 'o', "the harness keeps each job's output in DIR/jobs/batch"},
    {"error", 'e', "the harness keeps each job's output in DIR/jobs/batch"},
    {"parsable", 0, "the harness reads the job id that sbatch prints"},
    {"dependency", 'd', "the harness decides when points run"},
    {"nodes", 'N', "each point's nodes come from its settings (nodes)"},
    {"ntasks", 'n', "each point's ranks come from its settings (ranks)"},
    {"ntasks-per-node", 0, "each point's ranks per node come from its settings (ranks_per_node)"},
};

// Options that would leave a job the harness cannot follow, or a point that never ends or ends
// without its status; refused with the reason.
constexpr OwnedOption kRefusedOptions[] = {
    {"requeue", 0,
     "the harness decides what runs again (resume, --retry-failed), and a requeued job would run points whose end "
     "it has already recorded"},
    {"clusters", 'M',
     "the harness follows and cancels its jobs on the cluster it runs on (squeue and scancel without -M)"},
    {"cluster-constraint", 0,
     "the harness follows and cancels its jobs on the cluster it runs on (squeue and scancel without -M)"},
    {"signal", 0,
     "the job script traps TERM and INT only, so another signal would end it before it writes the point's status; "
     "the harness stops each point at its time limit itself (option \"time_limit_s\")"},
    {"wait", 'W', "sbatch would not return until the job ended, so the sweep would run one job at a time"},
    {"hold", 'H', "a held job's points would wait in the queue until someone released it"},
    {"begin", 'b',
     "the job's points would wait in the queue until that time (the harness submits a job when its points are to "
     "run)"},
    {"test-only", 0, "sbatch would only say when the job could start and submit nothing"},
    // ALL (the default) and ALL,NAME=value pass; exports_all() lets them through.
    {"export", 0,
     "srun's ranks would lose the environment the job script sets (OMP_NUM_THREADS and the like); expected ALL or "
     "ALL,NAME=value"},
};

// --export=ALL, or ALL with variables added: the whole environment still reaches the ranks.
bool exports_all(const OwnedOption& refused, const std::string& option) {
  const std::string::size_type equals = option.find('=');
  const std::string value = equals == std::string::npos ? "" : option.substr(equals + 1);
  return refused.name == "export" && (value == "ALL" || value.rfind("ALL,", 0) == 0);
}

// The entry of `table` that `option` ("--time=5", "--time 5", "-t5", "-t 5", or an abbreviation
// sbatch would accept such as "--tim=5") names, or null.
template <std::size_t N>
const OwnedOption* named_option(const std::string& option, const OwnedOption (&table)[N]) {
  if (option.rfind("--", 0) == 0) {
    const std::string name = option.substr(2, option.find_first_of("= \t", 2) - 2);
    if (name.empty()) return nullptr;
    for (const auto& entry : table) {
      // getopt_long takes any unambiguous prefix of a long option.
      if (entry.name.substr(0, name.size()) == name) return &entry;
    }
    return nullptr;
  }
  if (option.size() >= 2 && option[0] == '-') {
    for (const auto& entry : table) {
      if (entry.short_name != 0 && option[1] == entry.short_name) return &entry;
    }
  }
  return nullptr;
}

std::string matching_string(const Json& value, const std::string& where, const std::regex& pattern,
                            std::string_view expected) {
  if (!value.is_string() || value.get_ref<const std::string&>().size() > 256 ||
      !std::regex_match(value.get_ref<const std::string&>(), pattern)) {
    fail_expected(where, expected, value);
  }
  return value.get<std::string>();
}

// A list of strings, each checked by `read_one`.
template <typename ReadOne>
std::vector<std::string> string_list(const Json& value, const std::string& where, ReadOne read_one) {
  if (!value.is_array() || value.size() > 100) fail_expected(where, "a list of up to 100 strings", value);
  std::vector<std::string> strings;
  for (std::size_t i = 0; i < value.size(); ++i) {
    strings.push_back(read_one(value[i], fmt::format("{}[{}]", where, i)));
  }
  return strings;
}

// A shell line of the user's: any text but a control character (a newline would start a line
// the option does not show).
std::string shell_line(const Json& value, const std::string& where) {
  constexpr const char* kExpected = "one line of shell (at most 1000 bytes, no control characters)";
  if (!value.is_string()) fail_expected(where, kExpected, value);
  const auto& line = value.get_ref<const std::string&>();
  if (line.empty() || line.size() > 1000 || std::any_of(line.begin(), line.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      })) {
    fail_expected(where, kExpected, value);
  }
  return line;
}

// One of the user's sbatch options: not one the harness sets itself, and safe on an #SBATCH line.
std::string sbatch_option(const Json& value, const std::string& where) {
  if (value.is_string()) {
    const std::string& option = value.get_ref<const std::string&>();
    if (const OwnedOption* owned = named_option(option, kOwnedOptions)) {
      throw ConfigError(fmt::format("{}: {} is set by the harness on every job and cannot be overridden: {}", where,
                                    value.dump(), owned->why));
    }
    if (const OwnedOption* refused = named_option(option, kRefusedOptions); refused && !exports_all(*refused, option)) {
      throw ConfigError(fmt::format("{}: {} cannot be used with the slurm launcher: {}", where, value.dump(),
                                    refused->why));
    }
  }
  return matching_string(value, where, kSbatchOption, kSbatchExpected);
}

// A time limit in seconds, bounded so that minutes always fit SLURM's 32-bit fields.
OptionRow<SlurmOptions> time_limit_row(std::string_view key, std::string_view help, double SlurmOptions::*field) {
  return {key, kTimeLimitExpected, help, R"({"type": "number", "exclusiveMinimum": 0, "maximum": 31536000})",
          [field](SlurmOptions& o, const Json& v, const std::string& where) {
            const double seconds = read_positive_number(v, where);
            if (seconds > kMaxTimeLimitS) fail_expected(where, kTimeLimitExpected, v);
            o.*field = seconds;
          },
          [field](const SlurmOptions& o) { return Json(o.*field); }};
}

template <typename Field>
OptionRow<SlurmOptions> name_row(std::string_view key, std::string_view help, Field field) {
  return {key, kNameExpected, help, R"({"type": "string", "pattern": "^[A-Za-z0-9_.,-]+$"})",
          [field](SlurmOptions& o, const Json& v, const std::string& where) {
            o.*field = matching_string(v, where, kName, kNameExpected);
          },
          [field](const SlurmOptions& o) { return Json(o.*field); }};
}

}  // namespace

std::string_view mode_name(SlurmMode mode) {
  switch (mode) {
    case SlurmMode::kPerPoint: return "per-point";
    case SlurmMode::kArray: return "array";
    case SlurmMode::kPack: return "pack";
    case SlurmMode::kAuto: break;
  }
  return "auto";
}

std::string_view starter_name(RankStarter starter) {
  switch (starter) {
    case RankStarter::kSrun: return "srun";
    case RankStarter::kMpirun: return "mpirun";
    case RankStarter::kAuto: break;
  }
  return "auto";
}

const std::vector<OptionRow<SlurmOptions>>& slurm_option_rows() {
  static const std::vector<OptionRow<SlurmOptions>> rows = {
      name_row("partition", "sbatch --partition (default: the cluster's)", &SlurmOptions::partition),
      name_row("account", "sbatch --account", &SlurmOptions::account),
      name_row("qos", "sbatch --qos", &SlurmOptions::qos),
      {"constraint", kConstraintExpected, "sbatch --constraint: node features",
       R"({"type": "string"})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         o.constraint = matching_string(v, where, kConstraint, kConstraintExpected);
       },
       [](const SlurmOptions& o) { return Json(o.constraint); }},
      time_limit_row("time_limit_s",
                     "each point's time limit (default: its timeout_s); a job asks SLURM for that plus a minute "
                     "(a pack: a minute plus each point's limit and 30 s)",
                     &SlurmOptions::time_limit_s),
      time_limit_row("max_time_per_job_s",
                     "the longest time one job may ask for (default: the partition's MaxTime); packs are split to fit",
                     &SlurmOptions::max_time_per_job_s),
      boolean_row("exclusive", "sbatch --exclusive: whole nodes, shared with no other job", &SlurmOptions::exclusive),
      integer_row("gpus_per_node", "an integer from 0 to 64",
                  "sbatch --gpus-per-node for every job (default: one per rank on a node for points on cuda, none "
                  "otherwise)",
                  {0, 64}, &SlurmOptions::gpus_per_node),
      boolean_row("overcommit", "sbatch --overcommit: more ranks on a node than its CPUs (functional sweeps, small clusters)",
                  &SlurmOptions::overcommit),
      {"sbatch", "a list of sbatch options", "more #SBATCH lines, e.g. [\"--mail-type=END\"]",
       R"({"type": "array", "items": {"type": "string", "pattern": "^--[a-z][a-z0-9-]*(=[A-Za-z0-9_.,:=@/+%-]+)?$"}})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         o.sbatch = string_list(v, where, [](const Json& item, const std::string& at) {
           return sbatch_option(item, at);
         });
       },
       [](const SlurmOptions& o) { return Json(o.sbatch); }},
      {"setup", "a list of shell lines",
       "shell commands run as written before the ranks start, e.g. [\"module load openmpi\"]",
       R"({"type": "array", "items": {"type": "string"}})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         o.setup = string_list(v, where, shell_line);
       },
       [](const SlurmOptions& o) { return Json(o.setup); }},
      {"mode", "\"auto\", \"per-point\", \"array\" or \"pack\"",
       "per-point: a job per point; array: a job array per resource group; pack: one allocation "
       "per group running its points in turn; auto: pack when points are short, else array",
       R"({"enum": ["auto", "per-point", "array", "pack"]})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         const std::string mode = read_choice(v, where, {"auto", "per-point", "array", "pack"});
         for (const SlurmMode m : {SlurmMode::kAuto, SlurmMode::kPerPoint, SlurmMode::kArray, SlurmMode::kPack}) {
           if (mode_name(m) == mode) o.mode = m;
         }
       },
       [](const SlurmOptions& o) { return Json(std::string(mode_name(o.mode))); }},
      {"start_ranks_with", "\"auto\", \"srun\" or \"mpirun\"",
       "what starts the ranks in a job: srun (--mpi=pmix for Open MPI, pmi2 for MPICH), mpirun (the MPI's own "
       "launcher: mpirun, or hydra's mpiexec), or auto (srun when it offers that plugin)",
       R"({"enum": ["auto", "srun", "mpirun"]})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         const std::string starter = read_choice(v, where, {"auto", "srun", "mpirun"});
         for (const RankStarter s : {RankStarter::kAuto, RankStarter::kSrun, RankStarter::kMpirun}) {
           if (starter_name(s) == starter) o.start_ranks_with = s;
         }
       },
       [](const SlurmOptions& o) { return Json(std::string(starter_name(o.start_ranks_with))); }},
      {"srun_mpi", "an srun MPI plugin name (letters, digits, '_')",
       "the plugin srun starts ranks with (srun --mpi=...; default: pmix for Open MPI, pmi2 for MPICH's family; "
       "what `srun --mpi=list` offers, e.g. cray_shasta on HPE Cray EX)",
       R"({"type": "string", "pattern": "^[A-Za-z0-9_]+$"})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         o.srun_mpi = matching_string(v, where, kSrunMpi, "an srun MPI plugin name (letters, digits, '_')");
       },
       [](const SlurmOptions& o) { return Json(o.srun_mpi); }},
      integer_row("array_throttle", "an integer from 0 to 10000",
                  "array tasks running at once (sbatch --array=...%N); 0: as many as the cluster allows", {0, 10000},
                  &SlurmOptions::array_throttle),
      {"template", "a path to a job script template",
       "your own job script template (see slurm/job.sh.in for the placeholders it must hold)",
       R"({"type": "string"})",
       [](SlurmOptions& o, const Json& v, const std::string& where) {
         o.template_path = read_nonempty_string(v, where, "a path to a job script template");
       },
       [](const SlurmOptions& o) { return Json(o.template_path); }},
  };
  return rows;
}

}  // namespace harness
