#include "harness/launch/scheduler.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/common/usable_cpus.h"
#include "harness/launch/local_scheduler.h"
#include "harness/launch/slurm_scheduler.h"

namespace harness {

const std::vector<SchedulerInfo>& scheduler_table() {
  static const std::vector<SchedulerInfo> table = {
      {"local",
       "one mpirun per point on this machine, or srun over the nodes of the SLURM allocation it runs in (one "
       "point at a time unless max_parallel says)",
       make_local_scheduler,
       [] { return option_docs(local_option_rows()); }},
      {"slurm", "batch jobs on a SLURM cluster (sbatch): a job per point, job arrays or packed allocations",
       make_slurm_scheduler,
       [] { return option_docs(slurm_option_rows()); }},
  };
  return table;
}

Json launcher_schema(const std::vector<SchedulerInfo>& table) {
  Json names = Json::array();
  Json objects = Json::array();
  for (const auto& scheduler : table) {
    names.push_back(scheduler.name);
    Json properties = {{"name", {{"const", scheduler.name}}}};
    for (const auto& option : scheduler.options ? scheduler.options() : std::vector<OptionDoc>{}) {
      Json property = Json::parse(option.json_schema);
      property["description"] = std::string(option.help);
      properties[std::string(option.key)] = std::move(property);
    }
    objects.push_back({{"description", std::string(scheduler.summary)},
                       {"type", "object"},
                       {"required", Json::array({"name"})},
                       {"additionalProperties", false},
                       {"properties", properties}});
  }
  Json choices = Json::array({{{"enum", names}}});
  for (auto& object : objects) choices.push_back(std::move(object));
  return {{"description", "how points are started: a scheduler's name, or an object with its name "
                          "and options"},
          {"oneOf", choices}};
}

std::unique_ptr<Scheduler> make_scheduler(const LauncherSpec& spec,
                                          const std::vector<SchedulerInfo>& table) {
  const std::string where = spec.where.empty() ? "launcher" : spec.where;
  std::vector<std::string_view> names;
  for (const auto& entry : table) {
    if (entry.name == spec.name) return entry.make(spec);
    names.push_back(entry.name);
  }
  const std::string suggestion = closest_name(spec.name, names);
  throw ConfigError(fmt::format("{}: unknown launcher {} ({})", where, describe_text(spec.name),
                                suggestion.empty()
                                    ? fmt::format("expected one of: {}", fmt::join(names, ", "))
                                    : fmt::format("did you mean \"{}\"?", suggestion)));
}

std::vector<Submission> Scheduler::submit_all(const std::vector<JobSpec>& jobs, const OnSubmitted& submitted) {
  std::vector<Submission> submissions;
  for (const auto& job : jobs) {
    Submission submission;
    try {
      submission.id = submit(job);
    } catch (const Error& error) {
      submission.error = error.what();
    }
    if (submitted && submission.id != 0) submitted({{submissions.size(), submission.id}});
    submissions.push_back(std::move(submission));
  }
  return submissions;
}

int available_cores() { return usable_cpus().cores(); }

}  // namespace harness
