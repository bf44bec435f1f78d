// Measurements (what rank 0 writes at the end of a point) to and from JSON.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/results/gpu_facts.h"
#include "harness/results/json_fields.h"
#include "harness/results/record.h"

namespace harness {

std::size_t rank_sample_limit(std::size_t ranks) {
  return std::clamp(kRankSampleValues / std::max<std::size_t>(ranks, 1), kRankSampleMinSteps, kRankSampleSteps);
}

void thin_rank_sample(RankComputeSample& sample) {
  const std::size_t ranks = sample.compute_s.empty() ? 0 : sample.compute_s.front().size();
  const std::size_t limit = rank_sample_limit(ranks);
  const auto keep_multiples = [&sample] {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < sample.steps.size(); ++i) {
      if (sample.steps[i] % sample.stride != 0) continue;
      if (kept != i) {  // a vector moved onto itself is left empty
        sample.steps[kept] = sample.steps[i];
        sample.compute_s[kept] = std::move(sample.compute_s[i]);
      }
      ++kept;
    }
    sample.steps.resize(kept);
    sample.compute_s.resize(kept);
  };
  keep_multiples();
  while (sample.steps.size() > limit) {
    sample.stride *= 2;
    keep_multiples();
  }
}

namespace {

// JSON has no NaN or infinity: a diverged loss is stored as null.
Json finite_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(); }

Json to_json(const StepSeries& steps) {
  Json json = {{"step_s", steps.step_s},
               {"compute_s", steps.compute_s},
               {"comm_s", steps.comm_s},
               {"exposed_comm_s", steps.exposed_comm_s}};
  if (steps.wait_s) json["wait_s"] = *steps.wait_s;
  if (steps.imbalance_s) json["imbalance_s"] = *steps.imbalance_s;
  if (steps.slowest_rank) json["slowest_rank"] = *steps.slowest_rank;
  if (steps.slowest_lead_s) json["slowest_lead_s"] = *steps.slowest_lead_s;
  if (steps.rank_compute) {
    json["rank_compute"] = {{"stride", steps.rank_compute->stride},
                            {"steps", steps.rank_compute->steps},
                            {"compute_s", steps.rank_compute->compute_s}};
  }
  return json;
}

RankComputeSample rank_compute_from(const Fields& fields) {
  RankComputeSample sample;
  sample.stride = fields.integer("stride");
  if (sample.stride < 1 || (sample.stride & (sample.stride - 1)) != 0) fields.fail("stride", "a power of two");
  sample.steps = fields.list<int64_t>("steps");
  const Json& rows = fields.at("compute_s");
  if (!rows.is_array() || rows.size() != sample.steps.size()) {
    fields.fail("compute_s", fmt::format("a list of {} lists (one per sampled step)", sample.steps.size()));
  }
  for (std::size_t i = 0; i < sample.steps.size(); ++i) {
    if (sample.steps[i] < 0 || sample.steps[i] % sample.stride != 0 || (i > 0 && sample.steps[i] <= sample.steps[i - 1])) {
      fields.fail(fmt::format("steps[{}]", i).c_str(), "increasing multiples of stride");
    }
    const Json& row = rows[i];
    if (!row.is_array() || (i > 0 && row.size() != sample.compute_s.front().size())) {
      fields.fail(fmt::format("compute_s[{}]", i).c_str(), "a list of every rank's compute time, as long as the first");
    }
    std::vector<double>& values = sample.compute_s.emplace_back();
    for (const Json& value : row) {
      if (!value.is_number()) fields.fail(fmt::format("compute_s[{}]", i).c_str(), "numbers");
      values.push_back(value.get<double>());
    }
  }
  return sample;
}

StepSeries steps_from(const Fields& fields) {
  StepSeries steps;
  steps.step_s = fields.list<double>("step_s");
  steps.compute_s = fields.list<double>("compute_s");
  steps.comm_s = fields.list<double>("comm_s");
  steps.exposed_comm_s = fields.list<double>("exposed_comm_s");
  if (fields.has("wait_s")) steps.wait_s = fields.list<double>("wait_s");
  if (fields.has("imbalance_s")) steps.imbalance_s = fields.list<double>("imbalance_s");
  if (fields.has("slowest_rank")) steps.slowest_rank = fields.list<int>("slowest_rank");
  if (fields.has("slowest_lead_s")) steps.slowest_lead_s = fields.list<double>("slowest_lead_s");
  if (fields.has("rank_compute")) steps.rank_compute = rank_compute_from(fields.object("rank_compute"));
  const std::size_t count = steps.step_s.size();
  for (const auto* series : {&steps.compute_s, &steps.comm_s, &steps.exposed_comm_s}) {
    if (series->size() != count) fields.fail("", fmt::format("{} values in every series", count));
  }
  for (const auto& series : {steps.wait_s, steps.imbalance_s, steps.slowest_lead_s}) {
    if (series && series->size() != count) fields.fail("", fmt::format("{} values in every series", count));
  }
  if (steps.slowest_rank && steps.slowest_rank->size() != count) {
    fields.fail("slowest_rank", fmt::format("{} values, as every series", count));
  }
  if (steps.slowest_rank.has_value() != steps.slowest_lead_s.has_value()) {
    fields.fail(steps.slowest_rank ? "slowest_lead_s" : "slowest_rank", "present with its pair");
  }
  return steps;
}

Json to_json(const EpochMeasurement& epoch) {
  Json json = {{"epoch", epoch.epoch},
               {"train_loss", finite_or_null(epoch.train_loss)},
               {"test_loss", finite_or_null(epoch.test_loss)},
               {"test_accuracy", finite_or_null(epoch.test_accuracy)},
               {"train_time_s", epoch.train_time_s}};
  if (epoch.eval_time_s) json["eval_time_s"] = *epoch.eval_time_s;
  json["samples_seen"] = epoch.samples_seen;
  return json;
}

// Scheme pipeline's measurements (record.h's PipelineFacts).
Json to_json(const PipelineFacts& pipeline) {
  Json stages = Json::array();
  for (const PipelineStageFacts& stage : pipeline.stage) {
    stages.push_back({{"first_layer", stage.first_layer},
                      {"end_layer", stage.end_layer},
                      {"step_s", stage.step_s},
                      {"compute_s", stage.compute_s},
                      {"forward_s", stage.forward_s},
                      {"backward_s", stage.backward_s},
                      {"receive_wait_s", stage.receive_wait_s},
                      {"send_wait_s", stage.send_wait_s},
                      {"average_s", stage.average_s},
                      {"most_held", stage.most_held},
                      {"peak_activation_bytes", stage.peak_activation_bytes},
                      {"peak_step_bytes", stage.peak_step_bytes}});
  }
  return {{"stages", pipeline.stages},
          {"replicas", pipeline.replicas},
          {"micro_batches", pipeline.micro_batches},
          {"schedule", pipeline.schedule},
          {"boundaries", pipeline.boundaries},
          {"balanced", pipeline.balanced},
          {"layer_names", pipeline.layer_names},
          {"layer_times_s", pipeline.layer_times_s},
          {"stage", std::move(stages)}};
}

PipelineFacts pipeline_from(const Fields& pipeline) {
  PipelineFacts facts;
  facts.stages = static_cast<int>(pipeline.integer("stages"));
  facts.replicas = static_cast<int>(pipeline.integer("replicas"));
  facts.micro_batches = static_cast<int>(pipeline.integer("micro_batches"));
  facts.schedule = pipeline.text("schedule");
  facts.boundaries = pipeline.list<int>("boundaries");
  facts.balanced = pipeline.boolean("balanced");
  facts.layer_names = pipeline.list<std::string>("layer_names");
  facts.layer_times_s = pipeline.list<double>("layer_times_s");
  const Json& stages = pipeline.at("stage");
  if (!stages.is_array()) pipeline.fail("stage", "a list");
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const Fields stage(stages[i], fmt::format("{}: stage[{}]", pipeline.where(), i));
    PipelineStageFacts read;
    read.first_layer = static_cast<int>(stage.integer("first_layer"));
    read.end_layer = static_cast<int>(stage.integer("end_layer"));
    read.step_s = stage.number("step_s");
    read.compute_s = stage.number("compute_s");
    read.forward_s = stage.number("forward_s");
    read.backward_s = stage.number("backward_s");
    read.receive_wait_s = stage.number("receive_wait_s");
    read.send_wait_s = stage.number("send_wait_s");
    read.average_s = stage.number("average_s");
    read.most_held = static_cast<int>(stage.integer("most_held"));
    read.peak_activation_bytes = stage.integer("peak_activation_bytes");
    read.peak_step_bytes = stage.integer("peak_step_bytes");
    facts.stage.push_back(read);
  }
  return facts;
}

EpochMeasurement epoch_from(const Fields& fields) {
  EpochMeasurement epoch;
  epoch.epoch = static_cast<int>(fields.integer("epoch"));
  epoch.train_loss = fields.number_or_nan("train_loss");
  epoch.test_loss = fields.number_or_nan("test_loss");
  epoch.test_accuracy = fields.number_or_nan("test_accuracy");
  epoch.train_time_s = fields.number("train_time_s");
  if (fields.has("eval_time_s")) epoch.eval_time_s = fields.number("eval_time_s");
  epoch.samples_seen = fields.integer("samples_seen");
  return epoch;
}

void write_train(const TrainMeasurements& train, Json& json) {
  if (train.sgd) {
    json["parameters"] = train.sgd->parameters;
  }
  json["train_samples"] = train.train_samples;
  json["test_samples"] = train.test_samples;
  json["training_ranks"] = train.training_ranks;
  if (train.sgd) {
    json["per_rank_batch"] = train.sgd->per_rank_batch;
    json["global_batch"] = train.sgd->global_batch;
    json["final_lr"] = train.sgd->final_lr;
  }
  if (train.kmeans) {
    json["dimensions"] = train.kmeans->dimensions;
    json["iterations"] = train.kmeans->iterations;
    json["converged"] = train.kmeans->converged;
    json["centroids"] = train.kmeans->centroids;
  }
  json["steps_per_epoch"] = train.steps_per_epoch;
  json["samples_trained"] = train.samples_trained;
  json["train_time_s"] = train.train_time_s;
  if (train.sgd) json["buckets"] = train.sgd->buckets;
  json["steps"] = to_json(train.steps);
  Json epochs = Json::array();
  for (const auto& epoch : train.epochs) epochs.push_back(to_json(epoch));
  json["epochs"] = std::move(epochs);
  Json loss_curve = Json::array();
  for (const auto& value : train.loss_curve) {
    loss_curve.push_back({{"samples_seen", value.samples_seen}, {"train_loss", finite_or_null(value.train_loss)}});
  }
  json["loss_curve"] = std::move(loss_curve);
  if (train.time_to_target) {
    const TargetReached& target = *train.time_to_target;
    json["time_to_target"] = target.reached ? Json{{"reached", true}, {"time_s", target.time_s},
                                                   {"epoch", target.epoch}, {"step", target.step}}
                                            : Json{{"reached", false}};
  }
  if (train.async_ps) {
    json["async_ps"] = {{"servers", train.async_ps->servers},
                        {"staleness_counts", train.async_ps->staleness_counts},
                        {"server_busy_fraction", train.async_ps->server_busy_fraction},
                        {"worker_batches", train.async_ps->worker_batches}};
  }
  if (train.pipeline) json["pipeline"] = to_json(*train.pipeline);
  if (train.model_file) {
    json["model_file"] = {{"path", train.model_file->path},
                          {"sha256", train.model_file->sha256},
                          {"bytes", train.model_file->bytes}};
  }
}

TrainMeasurements train_from(const Fields& fields, int version) {
  TrainMeasurements train;
  train.train_samples = fields.integer("train_samples");
  train.test_samples = fields.integer("test_samples");
  train.training_ranks = static_cast<int>(fields.integer("training_ranks"));
  train.steps_per_epoch = fields.integer("steps_per_epoch");
  train.samples_trained = fields.number("samples_trained");
  train.train_time_s = fields.number("train_time_s");
  train.steps = steps_from(fields.object("steps"));
  const Json& epochs = fields.at("epochs");
  if (!epochs.is_array()) fields.fail("epochs", "a list");
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    train.epochs.push_back(epoch_from(Fields(epochs[i], fmt::format("{}: epochs[{}]", fields.where(), i))));
  }
  if (version >= 4) {
    const Json& loss_curve = fields.at("loss_curve");
    if (!loss_curve.is_array()) fields.fail("loss_curve", "a list");
    for (std::size_t i = 0; i < loss_curve.size(); ++i) {
      const Fields value(loss_curve[i], fmt::format("{}: loss_curve[{}]", fields.where(), i));
      train.loss_curve.push_back({value.integer("samples_seen"), value.number_or_nan("train_loss")});
      if (i > 0 && train.loss_curve[i].samples_seen <= train.loss_curve[i - 1].samples_seen) {
        value.fail("samples_seen", "more than the value before");
      }
    }
  }
  if (fields.has("iterations")) {
    KMeansFacts kmeans;
    kmeans.dimensions = static_cast<int>(fields.integer("dimensions"));
    kmeans.iterations = static_cast<int>(fields.integer("iterations"));
    kmeans.converged = fields.boolean("converged");
    kmeans.centroids = fields.list<float>("centroids");
    train.kmeans = std::move(kmeans);
  }
  // Version 1 wrote K-means points without the SGD facts too; they are there for every SGD point.
  if (fields.has("parameters") || (version >= 2 && !train.kmeans)) {
    SgdFacts sgd;
    sgd.parameters = fields.integer("parameters");
    sgd.per_rank_batch = fields.integer("per_rank_batch");
    sgd.global_batch = fields.integer("global_batch");
    sgd.final_lr = fields.number("final_lr");
    sgd.buckets = fields.integer("buckets");
    train.sgd = sgd;
  }
  if (fields.has("time_to_target")) {
    const Fields target = fields.object("time_to_target");
    TargetReached reached;
    reached.reached = target.boolean("reached");
    if (reached.reached) {
      reached.time_s = target.number("time_s");
      reached.epoch = static_cast<int>(target.integer("epoch"));
      reached.step = target.integer("step");
    }
    train.time_to_target = reached;
  }
  if (fields.has("async_ps")) {
    const Fields async_ps = fields.object("async_ps");
    AsyncPsFacts facts;
    facts.servers = static_cast<int>(async_ps.integer("servers"));
    facts.staleness_counts = async_ps.list<int64_t>("staleness_counts");
    facts.server_busy_fraction = async_ps.list<double>("server_busy_fraction");
    facts.worker_batches = async_ps.list<int64_t>("worker_batches");
    train.async_ps = std::move(facts);
  }
  if (fields.has("pipeline")) train.pipeline = pipeline_from(fields.object("pipeline"));
  if (fields.has("model_file")) {
    const Fields model_file = fields.object("model_file");
    train.model_file = ModelFileFacts{model_file.text("path"), model_file.text("sha256"), model_file.integer("bytes")};
  }
  return train;
}

Json to_json(const MessageSizeMetrics& size) {
  Json json = {{"bytes", size.bytes},
               {"time_us_median", size.time_us_median},
               {"time_us_min", size.time_us_min},
               {"time_us_max", size.time_us_max},
               {"algbw_gbps", size.algbw_gbps},
               {"busbw_gbps", size.busbw_gbps},
               {"wrong", size.wrong},
               {"reduce_probe_us", size.reduce_probe_us},
               {"copy_probe_us", size.copy_probe_us},
               {"reduce_probe_one_us", size.reduce_probe_one_us},
               {"copy_probe_one_us", size.copy_probe_one_us},
               {"intra_node_gbps", size.intra_node_gbps},
               {"inter_node_gbps", size.inter_node_gbps}};
  // The GPU's probes, on device "cuda" only.
  if (size.device_to_host_probe_us > 0 || size.host_to_device_probe_us > 0 || size.device_copy_probe_us > 0) {
    json["device_to_host_probe_us"] = size.device_to_host_probe_us;
    json["host_to_device_probe_us"] = size.host_to_device_probe_us;
    json["device_copy_probe_us"] = size.device_copy_probe_us;
  }
  return json;
}

CommMeasurements comm_from(const Fields& fields, int version) {
  CommMeasurements comm;
  const Json& sizes = fields.at("sizes");
  if (!sizes.is_array() || sizes.empty()) fields.fail("sizes", "a non-empty list");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const Fields size(sizes[i], fmt::format("{}: sizes[{}]", fields.where(), i));
    comm.sizes.push_back({size.integer("bytes"), size.number("time_us_median"),
                          size.number("time_us_min"), size.number("time_us_max"),
                          size.number("algbw_gbps"), size.number("busbw_gbps"),
                          size.integer("wrong")});
    if (version >= 5) {
      comm.sizes.back().reduce_probe_us = size.number("reduce_probe_us");
      comm.sizes.back().copy_probe_us = size.number("copy_probe_us");
    }
    if (version >= 6) {
      comm.sizes.back().reduce_probe_one_us = size.number("reduce_probe_one_us");
      comm.sizes.back().copy_probe_one_us = size.number("copy_probe_one_us");
      comm.sizes.back().intra_node_gbps = size.number("intra_node_gbps");
      comm.sizes.back().inter_node_gbps = size.number("inter_node_gbps");
    }
    if (size.has("device_copy_probe_us")) {  // device "cuda"
      comm.sizes.back().device_to_host_probe_us = size.number("device_to_host_probe_us");
      comm.sizes.back().host_to_device_probe_us = size.number("host_to_device_probe_us");
      comm.sizes.back().device_copy_probe_us = size.number("device_copy_probe_us");
    }
  }
  return comm;
}

Json to_json(const RankPhases& phases) {
  return {{"started_at", phases.started_at}, {"init_s", phases.init_s},
          {"data_s", phases.data_s},         {"train_s", phases.train_s},
          {"eval_s", phases.eval_s},         {"finished_at", phases.finished_at}};
}

RankPhases phases_from(const Fields& fields) {
  return {fields.number("started_at"), fields.number("init_s"), fields.number("data_s"),
          fields.number("train_s"),    fields.number("eval_s"), fields.number("finished_at")};
}

}  // namespace

std::vector<NodeRanks> node_layout(const std::vector<std::string>& hosts) {
  std::vector<NodeRanks> nodes;
  for (std::size_t rank = 0; rank < hosts.size(); ++rank) {
    auto node = std::find_if(nodes.begin(), nodes.end(), [&](const NodeRanks& n) { return n.host == hosts[rank]; });
    if (node == nodes.end()) node = nodes.insert(nodes.end(), NodeRanks{hosts[rank], {}});
    node->ranks.push_back(static_cast<int>(rank));
  }
  return nodes;
}

Json to_json(const Measurements& m) {
  Json json = Json::object();
  json["schema_version"] = m.schema_version;
  json["kind"] = std::string(kind_name(m.kind));
  json["complete"] = m.complete;
  json["world_size"] = m.world_size;
  json["threads_per_rank"] = m.threads_per_rank;
  json["allocator"] = m.allocator;
  json["hosts"] = m.hosts;
  Json nodes = Json::array();
  for (const NodeRanks& node : node_layout(m.hosts)) nodes.push_back({{"host", node.host}, {"ranks", node.ranks}});
  json["nodes"] = std::move(nodes);  // derived from hosts: written for readers, not read back
  json["mpi_library"] = m.mpi_library;
  json["torch_version"] = m.torch_version;
  if (m.machine) {
    json["machine"] = {{"host", m.machine->host},
                       {"cpu_model", m.machine->cpu_model},
                       {"logical_cpus", m.machine->logical_cpus},
                       {"memory_bytes", m.machine->memory_bytes}};
  }
  json["exchange_path"] = m.exchange_path;
  if (m.gpus) json["gpus"] = to_json(*m.gpus);
  if (!m.staging_levers.empty()) {
    Json steps = Json::array();
    for (const StagingLeverStep& step : m.staging_levers) {
      steps.push_back({{"from_bytes", step.from_bytes},
                       {"reduce_threads", step.levers.reduce_threads},
                       {"copy_engine_gathers", step.levers.copy_engine_gathers}});
    }
    json["staging_levers"] = std::move(steps);
  }
  if (m.oversubscribed) {
    json["oversubscribed"] = {{"host", m.oversubscribed->host},
                              {"ranks", m.oversubscribed->ranks},
                              {"threads_per_rank", m.oversubscribed->threads_per_rank},
                              {"cores", m.oversubscribed->cores}};
  }
  if (m.phases) json["phases"] = to_json(*m.phases);
  if (m.train) write_train(*m.train, json);
  if (m.comm) {
    Json sizes = Json::array();
    for (const auto& size : m.comm->sizes) sizes.push_back(to_json(size));
    json["sizes"] = std::move(sizes);
  }
  return json;
}

Measurements measurements_from_json(const Json& json, const std::string& where) {
  const Fields fields(json, where);
  Measurements m;
  const int version = readable_version(fields, kRecordSchemaVersion);
  m.schema_version = version;
  m.complete = version < 3 || fields.boolean("complete");
  const std::string kind = fields.text("kind");
  if (kind != "train" && kind != "comm") fields.fail("kind", "\"train\" or \"comm\"");
  m.kind = kind == "train" ? Kind::kTrain : Kind::kComm;
  m.world_size = static_cast<int>(fields.integer("world_size"));
  m.threads_per_rank = static_cast<int>(fields.integer("threads_per_rank"));
  m.allocator = fields.text("allocator");
  m.hosts = fields.list<std::string>("hosts");
  m.mpi_library = fields.text("mpi_library");
  m.torch_version = fields.text("torch_version");
  if (fields.has("machine")) {
    const Fields machine = fields.object("machine");
    m.machine = MachineFacts{machine.text("host"), machine.text("cpu_model"),
                             static_cast<int>(machine.integer("logical_cpus")), machine.integer("memory_bytes")};
  }
  if (version >= 8) m.exchange_path = fields.text("exchange_path");
  if (fields.has("gpus")) m.gpus = gpus_from(fields.object("gpus"));
  if (fields.has("staging_levers")) {
    const Json& steps = fields.at("staging_levers");
    if (!steps.is_array()) fields.fail("staging_levers", "a list");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Fields step(steps[i], fmt::format("{}: staging_levers[{}]", fields.where(), i));
      const int64_t from = step.integer("from_bytes");
      const int64_t threads = step.integer("reduce_threads");
      if (from < 0) step.fail("from_bytes", "a non-negative integer");
      if (threads < 1) step.fail("reduce_threads", "a positive integer");
      m.staging_levers.push_back(
          {static_cast<std::size_t>(from), {static_cast<int>(threads), step.boolean("copy_engine_gathers")}});
    }
  }
  if (fields.has("oversubscribed")) {
    const Fields o = fields.object("oversubscribed");
    m.oversubscribed = Oversubscription{o.text("host"), static_cast<int>(o.integer("ranks")),
                                        static_cast<int>(o.integer("threads_per_rank")),
                                        static_cast<int>(o.integer("cores"))};
  }
  if (fields.has("phases")) m.phases = phases_from(fields.object("phases"));
  if (m.kind == Kind::kTrain) {
    m.train = train_from(fields, version);
    if (const auto& slowest = m.train->steps.slowest_rank) {
      const auto outside = std::find_if(slowest->begin(), slowest->end(),
                                        [&m](int rank) { return rank < 0 || rank >= m.world_size; });
      if (outside != slowest->end()) {
        fields.fail("steps.slowest_rank",
                    fmt::format("ranks from 0 to {}, got {} at step {}", m.world_size - 1, *outside,
                                outside - slowest->begin()));
      }
    }
  } else {
    m.comm = comm_from(fields, version);
  }
  return m;
}

}  // namespace harness
