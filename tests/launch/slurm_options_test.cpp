// The SLURM launcher's options, refused in one line before anything is rendered or submitted:
// values that would reach a shell, options the harness sets on every job, templates without
// their placeholders.
#include "harness/launch/slurm_options.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/launch/launcher_option_error.h"

namespace harness {
namespace {
namespace fs = std::filesystem;
using testing::option_error;

fs::path options_scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("harness_slurm_options_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(SlurmOptions, ValuesThatWouldReachAShellAreRefusedInOneLine) {
  EXPECT_EQ(option_error(R"({"name": "slurm", "partition": "debug"})"), "");
  for (const char* bad : {"a;b", "$(reboot)", "`id`", "a b", "a\nb", "a'b", "a\"b"}) {
    const Json value = bad;
    const std::string error = option_error(R"({"name": "slurm", "partition": )" + value.dump() + "}");
    EXPECT_EQ(error.find("exp.json: launcher.partition: expected a SLURM name"), 0U) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_NE(option_error(R"({"name": "slurm", "account": "x;rm"})").find("launcher.account"), std::string::npos);
  EXPECT_NE(option_error(R"j({"name": "slurm", "constraint": "a$(b)"})j").find("launcher.constraint"), std::string::npos);
  EXPECT_EQ(option_error(R"({"name": "slurm", "constraint": "[skylake|haswell]&ib"})"), "");
  EXPECT_NE(option_error(R"({"name": "slurm", "sbatch": ["--mail-type=END;id"]})").find("launcher.sbatch[0]"),
            std::string::npos);
  EXPECT_NE(option_error(R"({"name": "slurm", "sbatch": ["--comment=a b"]})").find("launcher.sbatch[0]"),
            std::string::npos);
  EXPECT_EQ(option_error(R"({"name": "slurm", "sbatch": ["--mail-type=END", "--no-requeue"]})"), "");
  EXPECT_NE(option_error(R"({"name": "slurm", "setup": ["module load x\nid"]})").find("launcher.setup[0]"),
            std::string::npos);
  EXPECT_NE(option_error(R"({"name": "slurm", "mode": "packed"})").find("expected \"auto\", \"per-point\""),
            std::string::npos);
  EXPECT_EQ(option_error(R"({"name": "slurm", "partitoin": "x"})"),
            "exp.json: launcher.partitoin: unknown option \"partitoin\" (did you mean \"partition\"?)");
}

TEST(SlurmOptions, OptionsTheHarnessSetsOnEveryJobAreRefusedWithTheReason) {
  EXPECT_EQ(option_error(R"({"name": "slurm", "sbatch": ["--job-name=mine"]})"),
            "exp.json: launcher.sbatch[0]: \"--job-name=mine\" is set by the harness on every job and cannot be "
            "overridden: the harness names every job harness-<sweep id> and finds them by that name");
  for (const char* owned :
       {"--job-name=mine", "--job-name mine", "-J", "-Jmine", "-J mine", "--job=mine", "--comment=x", "--array=0-3",
        "-a", "-a0-3", "--time=1", "--time 1", "-t", "-t1", "--tim=1", "--output=x", "-o", "--error=x", "-e",
        "--parsable", "--dependency=afterok:1", "-d", "--nodes=2", "-N2", "--ntasks=2", "-n 2",
        "--ntasks-per-node=2"}) {
    const std::string error =
        option_error(R"({"name": "slurm", "sbatch": ["--mail-type=END", )" + Json(owned).dump() + "]}");
    EXPECT_EQ(error.find("exp.json: launcher.sbatch[1]: " + Json(owned).dump() + " is set by the harness"), 0U)
        << owned << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // Options of their own, even those that start like one of the harness's, pass.
  EXPECT_EQ(option_error(R"({"name": "slurm", "sbatch": ["--time-min=5", "--nodelist=a", "--reservation=r",
                                                          "--ntasks-per-core=1", "--mail-type=END"]})"),
            "");
}

// Options that would leave a job the harness cannot follow, or a point without its status.
void expect_refused(const std::string& option, const std::string& why) {
  const std::string error = option_error(R"({"name": "slurm", "sbatch": [)" + Json(option).dump() + "]}");
  EXPECT_EQ(error.find("exp.json: launcher.sbatch[0]: " + Json(option).dump() +
                       " cannot be used with the slurm launcher: " + why),
            0U)
      << option << ": " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(SlurmOptions, RequeueIsRefusedAsTheHarnessDecidesWhatRunsAgain) {
  for (const char* option : {"--requeue", "--req"}) expect_refused(option, "the harness decides what runs again");
}

TEST(SlurmOptions, ClustersAreRefusedAsTheHarnessFollowsItsJobsOnItsOwn) {
  for (const char* option :
       {"--clusters=other", "--cluster=other", "--clu=other", "--cluster-constraint=x", "-Mother"}) {
    const std::string error = option_error(R"({"name": "slurm", "sbatch": [)" + Json(option).dump() + "]}");
    EXPECT_NE(error.find("the cluster it runs on"), std::string::npos) << option << ": " << error;
  }
  expect_refused("--clusters=other", "the harness follows and cancels its jobs on the cluster it runs on");
}

TEST(SlurmOptions, SignalIsRefusedAsTheJobScriptTrapsOnlyTermAndInt) {
  for (const char* option : {"--signal=B:USR1@60", "--signal=TERM@30", "--sig=USR2"}) {
    expect_refused(option, "the job script traps TERM and INT only");
  }
}

TEST(SlurmOptions, AnExportOtherThanAllIsRefusedAsTheRanksWouldLoseTheirEnvironment) {
  for (const char* option : {"--export=NONE", "--export=PATH,HOME", "--export=NIL", "--exp=NONE", "--export"}) {
    expect_refused(option, "srun's ranks would lose the environment the job script sets");
  }
  EXPECT_EQ(option_error(R"({"name": "slurm", "sbatch": ["--export=ALL", "--export=ALL,DATA=/scratch"]})"), "");
}

TEST(SlurmOptions, WaitHoldBeginAndTestOnlyAreRefusedEachWithItsReason) {
  expect_refused("--wait", "sbatch would not return until the job ended");
  expect_refused("-W", "sbatch would not return until the job ended");
  expect_refused("--hold", "a held job's points would wait in the queue");
  expect_refused("-H", "a held job's points would wait in the queue");
  for (const char* option : {"--begin=now+1hour", "--begin=16:00", "--beg=tomorrow", "-b now+60"}) {
    expect_refused(option, "the job's points would wait in the queue until that time");
  }
  expect_refused("--test-only", "sbatch would only say when the job could start");
  // Options of their own that start alike.
  EXPECT_EQ(option_error(R"({"name": "slurm", "sbatch": ["--wait-all-nodes=1", "--hint=nomultithread", "--bell"]})"),
            "");
}

TEST(SlurmOptions, ATemplateMustHoldEveryPlaceholderOnce) {
  const fs::path dir = options_scratch("template");
  std::ofstream(dir / "t.sh") << "#!/bin/bash\n{{sbatch}}\n{{setup}}\n{{points}}\n{{run}}\n";
  const std::string error = option_error(R"({"name": "slurm", "template": ")" + (dir / "t.sh").string() + "\"}");
  EXPECT_NE(error.find("expected the placeholder {{status_dir}} once, found it 0 time(s)"), std::string::npos) << error;
  std::ofstream(dir / "u.sh") << "{{sbatch}} {{setup}} {{status_dir}} {{points}} {{run}} {{oops}}\n";
  EXPECT_NE(option_error(R"({"name": "slurm", "template": ")" + (dir / "u.sh").string() + "\"}")
                .find("unknown placeholder {{oops}}"),
            std::string::npos);
  EXPECT_NE(option_error(R"({"name": "slurm", "template": "/no/such/template.sh"})").find("launcher.template"),
            std::string::npos);
}

std::string template_error(const fs::path& dir, const std::string& text) {
  std::ofstream(dir / "t.sh") << text;
  return option_error(R"({"name": "slurm", "template": ")" + (dir / "t.sh").string() + "\"}");
}

// sbatch reads #SBATCH lines only up to the first command; a placeholder with spaces would stay
// in the script as it is.
TEST(SlurmOptions, ATemplatesDirectivesComeBeforeAnyCommandAndItsPlaceholdersHaveNoSpaces) {
  const fs::path dir = options_scratch("template_order");
  const std::string rest = "{{setup}}\n{{status_dir}}\n{{points}}\n{{run}}\n";
  EXPECT_EQ(template_error(dir, "#!/bin/bash\n\n  # mine\n{{sbatch}}\nset -u\n" + rest), "");
  // The harness's own, copied to start one's own, passes.
  EXPECT_EQ(option_error(R"({"name": "slurm", "template": ")" HARNESS_SOURCE_DIR R"(/slurm/job.sh.in"})"), "");
  const std::string late = template_error(dir, "#!/bin/bash\nmodule load x\n{{sbatch}}\n" + rest);
  EXPECT_EQ(late, "exp.json: launcher.template: " + (dir / "t.sh").string() +
                      ":2: \"module load x\" comes before {{sbatch}}, and sbatch reads no #SBATCH line after the "
                      "first command: expected {{sbatch}} alone on its line, after only comments and blank lines");
  for (const char* shared : {"# {{sbatch}}\n", "{{sbatch}} x\n", "  {{sbatch}}\n"}) {
    EXPECT_NE(template_error(dir, "#!/bin/bash\n" + std::string(shared) + rest).find("{{sbatch}} shares its line"),
              std::string::npos)
        << shared;
  }
  const std::string spaced = template_error(dir, "{{sbatch}}\n{{setup}}\n{{status_dir}}\n{{ points }}\n{{run}}\n");
  EXPECT_NE(spaced.find("placeholder {{ points }} has spaces inside its braces"), std::string::npos) << spaced;
  EXPECT_EQ(spaced.find('\n'), std::string::npos) << spaced;
}

}  // namespace
}  // namespace harness
