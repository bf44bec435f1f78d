#include "harness/results/record.h"

#include <cmath>
#include <limits>
#include <algorithm>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/results/json_fields.h"
#include "harness/study/point_key.h"

namespace harness {
namespace {

Json to_json(const PointTiming& timing) {
  return {{"launch_s", timing.launch_s}, {"init_s", timing.init_s},   {"data_s", timing.data_s},
          {"train_s", timing.train_s},   {"eval_s", timing.eval_s},   {"finish_s", timing.finish_s}};
}

PointTiming timing_from(const Fields& fields) {
  return {fields.number("launch_s"), fields.number("init_s"), fields.number("data_s"),
          fields.number("train_s"),  fields.number("eval_s"), fields.number("finish_s")};
}

constexpr std::pair<PointStatus, std::string_view> kStatusNames[] = {
    {PointStatus::kOk, "ok"},
    {PointStatus::kFailed, "failed"},
    {PointStatus::kTimeout, "timeout"},
    {PointStatus::kCancelled, "cancelled"},
    {PointStatus::kOutOfMemory, "oom"},
    {PointStatus::kNodeFailure, "node_failure"},
    {PointStatus::kPreempted, "preempted"},
    {PointStatus::kLost, "lost"},
};

}  // namespace

std::string_view status_name(PointStatus status) {
  for (const auto& [value, name] : kStatusNames) {
    if (value == status) return name;
  }
  return "failed";
}

std::optional<PointStatus> status_from_name(std::string_view name) {
  for (const auto& [value, known] : kStatusNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

bool is_retryable(PointStatus status) {
  return status == PointStatus::kNodeFailure || status == PointStatus::kPreempted;
}

bool ended_by_the_scheduler(PointStatus status) {
  return is_retryable(status) || status == PointStatus::kCancelled || status == PointStatus::kLost;
}

Json to_json(const BuildProvenance& build) {
  Json json = {{"name", build.name},
               {"path", build.path},
               {"version", build.version},
               {"commit", build.commit},
               {"fingerprint", build.fingerprint}};
  if (!build.settings.empty()) json["settings"] = build.settings;
  return json;
}

BuildProvenance build_provenance_from_json(const Json& json, const std::string& where) {
  const Fields fields(json, where);
  BuildProvenance build{fields.text("name"), fields.text("path"), fields.text("version"), fields.text("commit"),
                        fields.text("fingerprint")};
  if (fields.has("settings")) {
    build.settings = fields.at("settings");
    if (!build.settings.is_object()) fields.fail("settings", "an object of setting values");
  }
  return build;
}

Json to_json(const PointRecord& record) {
  Json json = Json::object();
  json["schema_version"] = kRecordSchemaVersion;
  json["experiment"] = record.experiment;
  json["id"] = record.id;
  json["index"] = record.index;
  json["repeat"] = record.repeat;
  json["key"] = record.key;
  json["status"] = std::string(status_name(record.status));
  if (!record.ok()) {
    json["reason"] = record.reason;
    json["log_tail"] = record.log_tail;
  }
  Json settings = to_json(record.settings);
  // The pipeline's settings only where they are read: on any other point validation keeps them at
  // their defaults, which a reader fills in, and the records of the other schemes stay as they were
  // (a failed point's record on a nearly full disk fits where it did).
  if (record.settings.scheme != "pipeline") {
    for (const char* key : {"pipeline_stages", "micro_batches", "pipeline_schedule", "stage_boundaries"}) {
      settings.erase(key);
    }
  }
  json["settings"] = std::move(settings);
  json["launch"] = {{"scheduler", record.launch.scheduler},
                    {"job_id", record.launch.job_id},
                    {"command", record.launch.command},
                    {"threads_per_rank", record.launch.threads_per_rank},
                    {"outcome", record.launch.outcome},
                    {"wall_time_s", record.launch.wall_time_s}};
  if (!record.launch.host.empty()) json["launch"]["host"] = record.launch.host;
  if (record.timing) json["timing"] = to_json(*record.timing);
  const Provenance& p = record.provenance;
  json["provenance"] = {{"harness_version", p.harness_version}, {"git_commit", p.git_commit},
                        {"host", p.host},
                        {"command_line", p.command_line},
                        {"working_directory", p.working_directory},
                        {"started_at", p.started_at},
                        {"finished_at", p.finished_at}};
  if (record.build) json["build"] = to_json(*record.build);
  json["measurements"] = record.measurements ? to_json(*record.measurements) : Json();
  if (record.partial_measurements) json["partial_measurements"] = to_json(*record.partial_measurements);
  return json;
}

PointRecord record_from_json(const Json& json, const std::string& where) {
  const Fields fields(json, where);
  PointRecord record;
  record.schema_version = readable_version(fields, kRecordSchemaVersion);
  record.experiment = fields.text("experiment");
  record.id = fields.text("id");
  record.index = static_cast<int>(fields.integer("index"));
  record.repeat = static_cast<int>(fields.integer("repeat"));
  const std::optional<PointStatus> status = status_from_name(fields.text("status"));
  // Versions 1 and 2 knew only these two.
  if (!status || (record.schema_version < 3 && *status != PointStatus::kOk &&
                  *status != PointStatus::kFailed)) {
    fields.fail("status", record.schema_version < 3
                              ? "\"ok\" or \"failed\""
                              : "\"ok\", \"failed\", \"timeout\", \"cancelled\", \"oom\", "
                                "\"node_failure\", \"preempted\" or \"lost\"");
  }
  record.status = *status;
  if (!record.ok()) {
    record.reason = fields.text("reason");
    if (fields.has("log_tail")) record.log_tail = fields.list<std::string>("log_tail");
  }
  try {
    record.settings = settings_from_json(fields.at("settings"), where + ": settings");
  } catch (const ConfigError& error) {
    throw Error(error.what());  // a record's settings this harness cannot read: a bad record
  }
  // Before "auto" (version 14) the staging levers' defaults were 1 thread and no gathering. On
  // host memory that is what "auto" is, so such a record is its point's under the new default; on
  // a GPU it ran with them, and says so (also where it predates the settings).
  if (record.schema_version < kStagingLeversAutoSince) {
    const bool on_device = record.settings.device == "cuda";
    for (const auto& [key, old_default] : {std::pair<const char*, Json>{"shm_reduce_threads", 1},
                                           std::pair<const char*, Json>{"shm_copy_engine_gathers", false}}) {
      const Json value = record.settings.options.value(key, old_default);
      record.settings.options[key] = !on_device && value == old_default ? Json("auto") : value;
    }
  }
  // The key is recomputed from the settings as this harness reads them, not taken from the file:
  // a setting added since the record was written takes its default there, and the record must
  // still be found by the points of its experiment (version 1 even hashed the harness version).
  record.key = PointKey(record.settings, record.repeat).hash();
  const Fields launch = fields.object("launch");
  record.launch.scheduler = record.schema_version >= 2 ? launch.text("scheduler") : "local";
  if (record.schema_version >= 3) record.launch.job_id = launch.text("job_id");
  record.launch.command = launch.list<std::string>("command");
  record.launch.threads_per_rank = static_cast<int>(launch.integer("threads_per_rank"));
  record.launch.outcome = launch.text("outcome");
  record.launch.wall_time_s = launch.number("wall_time_s");
  if (launch.has("host")) record.launch.host = launch.text("host");
  if (fields.has("timing")) record.timing = timing_from(fields.object("timing"));
  const Fields provenance = fields.object("provenance");
  Provenance& p = record.provenance;
  p.harness_version = provenance.text("harness_version");
  p.git_commit = provenance.text("git_commit");
  p.host = provenance.text("host");
  p.command_line = provenance.list<std::string>("command_line");
  p.working_directory = provenance.text("working_directory");
  p.started_at = provenance.text("started_at");
  p.finished_at = provenance.text("finished_at");
  if (fields.has("build")) record.build = build_provenance_from_json(fields.at("build"), where + ": build");
  if (!record.ok() && fields.has("partial_measurements")) {
    record.partial_measurements =
        measurements_from_json(fields.at("partial_measurements"), where + ": partial_measurements");
  }
  if (record.ok()) {
    if (!fields.has("measurements")) {
      throw Error(fmt::format("{}: status \"ok\" without measurements", where));
    }
    record.measurements = measurements_from_json(fields.at("measurements"), where + ": measurements");
    if (!record.measurements->complete) {
      throw Error(fmt::format("{}: status \"ok\" with incomplete measurements", where));
    }
    if (record.measurements->kind != record.settings.kind) {
      throw Error(fmt::format("{}: measurements of kind \"{}\" for a point of kind \"{}\"", where,
                              kind_name(record.measurements->kind), kind_name(record.settings.kind)));
    }
  }
  return record;
}

PointTiming point_timing(double job_started_at, double wall_time_s, const RankPhases& phases) {
  PointTiming timing;
  timing.launch_s = std::max(0.0, phases.started_at - job_started_at);
  timing.init_s = phases.init_s;
  timing.data_s = phases.data_s;
  timing.train_s = phases.train_s;
  timing.eval_s = phases.eval_s;
  // The rest of the job's time: gathering and writing, the ranks and mpirun ending.
  timing.finish_s = std::max(0.0, wall_time_s - timing.launch_s - timing.init_s - timing.data_s -
                                      timing.train_s - timing.eval_s);
  return timing;
}

std::optional<TargetReached> time_to_target(const std::vector<EpochMeasurement>& epochs, int64_t steps_per_epoch,
                                            const std::optional<TrainingTarget>& target) {
  if (!target) return std::nullopt;
  TargetReached reached;
  double time_s = 0;
  for (const EpochMeasurement& epoch : epochs) {
    time_s += epoch.train_time_s;
    const double value = target->metric == "train_loss" ? epoch.train_loss
                         : target->metric == "test_loss" ? epoch.test_loss
                                                         : epoch.test_accuracy;
    // NaN compares false both ways: a diverged epoch reaches nothing.
    const bool there = target->metric == "test_accuracy" ? value >= target->value : value <= target->value;
    if (there) {
      reached = {true, time_s, epoch.epoch, static_cast<int64_t>(epoch.epoch) * steps_per_epoch};
      break;
    }
  }
  return reached;
}

int64_t staleness_quantile(const std::vector<int64_t>& counts, double fraction) {
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (total == 0) return 0;
  int64_t below = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    below += counts[s];
    if (static_cast<double>(below) >= fraction * static_cast<double>(total)) return static_cast<int64_t>(s);
  }
  return static_cast<int64_t>(counts.size()) - 1;
}

double predicted_pipeline_bubble(const PipelineFacts& pipeline) {
  return static_cast<double>(pipeline.stages - 1) / static_cast<double>(pipeline.micro_batches + pipeline.stages - 1);
}

namespace {

const PipelineStageFacts* busiest_stage(const PipelineFacts& pipeline) {
  const auto busiest = std::max_element(
      pipeline.stage.begin(), pipeline.stage.end(),
      [](const PipelineStageFacts& a, const PipelineStageFacts& b) { return a.compute_s < b.compute_s; });
  return busiest == pipeline.stage.end() ? nullptr : &*busiest;
}

}  // namespace

double measured_pipeline_bubble(const PipelineFacts& pipeline) {
  double compute = 0;
  double step = 0;
  for (const PipelineStageFacts& stage : pipeline.stage) {
    compute += stage.compute_s;
    step += stage.step_s - stage.average_s;
  }
  return step > 0 ? std::max(0.0, 1.0 - compute / step) : 0;
}

double pipeline_stage_imbalance(const PipelineFacts& pipeline) {
  const PipelineStageFacts* busiest = busiest_stage(pipeline);
  if (busiest == nullptr) return 0;
  double sum = 0;
  for (const PipelineStageFacts& stage : pipeline.stage) sum += stage.compute_s;
  const double mean = sum / static_cast<double>(pipeline.stage.size());
  return mean > 0 ? busiest->compute_s / mean - 1.0 : 0;
}

}  // namespace harness
