// The rows of the settings every point has (settings.h); kinds, backends and workloads add their
// own (settings.cpp assembles the table).
#include "harness/study/common_settings.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "harness/common/json_values.h"
#include "harness/common/option_rows.h"
#include "harness/common/text.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr std::string_view kStagingChunkExpected = "a multiple of 4 bytes from 4096 to 1073741824";

// A row of a number setting: above 0 (`positive`) or at least 0, and at most `max` (0: no
// maximum). A value of the wrong sign gets the sign's message, one above `max` `expected`.
SettingRow number_row(std::string_view key, std::string_view expected, std::string_view help, bool positive,
                      int64_t max, double PointSettings::*field) {
  std::string schema = positive ? R"({"type": "number", "exclusiveMinimum": 0)" : R"({"type": "number", "minimum": 0)";
  if (max > 0) schema += fmt::format(R"(, "maximum": {})", max);
  return {key, expected, help, kept_text(schema + "}"),
          [expected, positive, max, field](PointSettings& s, const Json& v, const std::string& where) {
            const double value = positive ? read_positive_number(v, where) : read_non_negative_number(v, where);
            if (max > 0 && value > static_cast<double>(max)) fail_expected(where, expected, v);
            s.*field = value;
          },
          [field](const PointSettings& s) { return Json(s.*field); }};
}

// A path that error messages echo: it must fit on one line.
SettingRow data_path_row() {
  constexpr std::string_view kExpected = "a path (at most 4096 bytes, no control characters)";
  return {"data_path", kExpected,
          "training data: a CSV file for iris_mlp, a directory of IDX files for mnist_cnn (and torchscript's "
          "model_data mnist), a text file read as bytes for gpt (empty = the workload's own)",
          R"({"type": "string"})",
          [kExpected](PointSettings& s, const Json& v, const std::string& where) {
            if (!v.is_string() || v.get_ref<const std::string&>().size() > 4096) fail_expected(where, kExpected, v);
            const auto& path = v.get_ref<const std::string&>();
            if (std::any_of(path.begin(), path.end(),
                            [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
              fail_expected(where, kExpected, v);
            }
            s.data_path = path;
          },
          [](const PointSettings& s) { return Json(s.data_path); }};
}

// {"metric": ..., "value": ...} or null (no target).
SettingRow target_row() {
  constexpr std::string_view kExpected =
      "null or {\"metric\": \"train_loss\", \"test_loss\" or \"test_accuracy\", \"value\": a number}";
  return {"target", kExpected,
          "time to accuracy: the training time (evaluation excluded) until the first epoch whose metric reached "
          "the value (test_accuracy at least it, a loss at most it); null: none",
          R"({"anyOf": [{"type": "null"}, {"type": "object", "required": ["metric", "value"], )"
          R"("additionalProperties": false, "properties": {"metric": {"enum": ["train_loss", "test_loss", )"
          R"("test_accuracy"]}, "value": {"type": "number"}}}]})",
          [kExpected](PointSettings& s, const Json& v, const std::string& where) {
            if (v.is_null()) {
              s.target.reset();
              return;
            }
            if (!v.is_object() || v.size() != 2 || !v.contains("metric") || !v.contains("value") ||
                !v["metric"].is_string() || !v["value"].is_number()) {
              fail_expected(where, kExpected, v);
            }
            const auto& metric = v["metric"].get_ref<const std::string&>();
            if (std::find(kTargetMetrics.begin(), kTargetMetrics.end(), metric) == kTargetMetrics.end()) {
              fail_expected(where + ".metric", "\"train_loss\", \"test_loss\" or \"test_accuracy\"", v["metric"]);
            }
            const double value = v["value"].get<double>();
            if (metric == "test_accuracy" && (value < 0 || value > 1)) {
              fail_expected(where + ".value", "an accuracy from 0 to 1", v["value"]);
            }
            s.target = TrainingTarget{metric, value};
          },
          [](const PointSettings& s) {
            return s.target ? Json{{"metric", s.target->metric}, {"value", s.target->value}} : Json(nullptr);
          }};
}

SettingRow build_row() {
  constexpr std::string_view kExpected = "a build name (letters, digits, '_', '.', '-'; \"\" = the running harness)";
  return {"build", kExpected,
          "which harness build's rank program runs the point: a name from the experiment's \"builds\" "
          "or harness run --build NAME=PATH (\"\" = the running harness); compares builds interleaved",
          R"({"type": "string", "pattern": "^([A-Za-z0-9_][A-Za-z0-9_.-]{0,99})?$"})",
          [kExpected](PointSettings& s, const Json& v, const std::string& where) {
            if (!v.is_string()) fail_expected(where, kExpected, v);
            const auto& name = v.get_ref<const std::string&>();
            if (!name.empty() && !is_plain_name(name)) fail_expected(where, kExpected, v);
            s.build = name;
          },
          [](const PointSettings& s) { return Json(s.build); }};
}

// What runs and where: the kind of point, its workload and backend, its ranks and nodes.
std::vector<SettingRow> placement_rows() {
  return {
      {"kind", "\"train\" or \"comm\"",
       "train: data-parallel training; comm: message-size sweep of the backend alone",
       choice_schema({"train", "comm"}),
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.kind = read_choice(v, where, {"train", "comm"}) == "train" ? Kind::kTrain : Kind::kComm;
       },
       [](const PointSettings& s) { return Json(std::string(kind_name(s.kind))); }},
      {"workload", "a workload name", "what each rank trains (see Workloads)", R"({"type": "string"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.workload = read_nonempty_string(v, where, "a workload name");
       },
       [](const PointSettings& s) { return Json(s.workload); }},
      choice_row("engine",
                 "torch: LibTorch autograd; blas: forward and backward by hand over cblas_sgemm (iris_mlp)",
                 {"torch", "blas"}, &PointSettings::engine),
      {"backend", "a backend name", "how gradients are synchronised (see Backends)", R"({"type": "string"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.backend = read_nonempty_string(v, where, "a backend name");
       },
       [](const PointSettings& s) { return Json(s.backend); }},
      {"scheme", "a scheme name", "how the ranks train together: sync or local_sgd (see Schemes)",
       R"({"type": "string"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.scheme = read_nonempty_string(v, where, "a scheme name");
       },
       [](const PointSettings& s) { return Json(s.scheme); }},
      choice_row("device", "where tensors live: cpu or cuda", {"cpu", "cuda"}, &PointSettings::device),
      integer_row("ranks", "a positive integer (at most 4096)", "MPI ranks (processes) for the point", {1, 4096},
                  &PointSettings::ranks),
      integer_row("nodes", "a positive integer (at most 4096)",
                  "nodes the ranks are spread over (1: one machine; more needs a cluster launcher)", {1, 4096},
                  &PointSettings::nodes),
      integer_row("ranks_per_node", "a non-negative integer (0 = as the launcher places them)",
                  "ranks on each node; nodes × ranks_per_node must equal ranks (0: the launcher spreads them)",
                  {0, 4096}, &PointSettings::ranks_per_node),
  };
}

// How each rank trains: batches, data, epochs, the learning rate and its schedule, the seed.
std::vector<SettingRow> training_rows() {
  return {
      integer_row("batch_size", "a positive integer",
                  "samples per step: per training rank (scaling weak) or in all (scaling strong)", {1, kMaxInt},
                  &PointSettings::batch_size),
      choice_row("scaling", "weak: batch_size per rank; strong: batch_size is the global batch, split over the ranks",
                 {"weak", "strong"}, &PointSettings::scaling),
      integer_row("dataset_size", "a non-negative integer (0 = whole training set)", "training samples used (0 = all)",
                  {0}, &PointSettings::dataset_size),
      integer_row("test_size", "a non-negative integer (0 = the whole held-out set)",
                  "held-out samples evaluated after each epoch (0 = all)", {0}, &PointSettings::test_size),
      integer_row("epochs", "a positive integer", "passes over the training set", {1, kMaxInt},
                  &PointSettings::epochs),
      number_row("lr", "a positive number", "SGD learning rate", true, 0, &PointSettings::lr),
      choice_row("lr_scaling", "linear: lr × global batch / lr_reference_batch, after warmup_epochs",
                 {"none", "linear"}, &PointSettings::lr_scaling),
      integer_row("lr_reference_batch", "a non-negative integer (0 = batch_size)",
                  "lr_scaling linear: the batch lr is meant for (0 = batch_size, one rank's batch)", {0, kMaxInt},
                  &PointSettings::lr_reference_batch),
      number_row("warmup_epochs", "a non-negative number",
                 "lr_scaling linear: epochs of linear ramp from lr to the scaled rate", false, 0,
                 &PointSettings::warmup_epochs),
      integer_row("warmup_steps", "a non-negative integer",
                  "first steps that train but are not timed (allocation, connections warm up)", {0, kMaxInt},
                  &PointSettings::warmup_steps),
      integer_row("loss_every", "a non-negative integer (0 = about 100 values per point)",
                  "steps per value of the training-loss curve (mean over them, all ranks); 0 = about 100 values "
                  "per point",
                  {0, kMaxInt}, &PointSettings::loss_every),
      integer_row("seed", "a non-negative integer", "seed for initial weights, splits and shuffles", {0},
                  &PointSettings::seed),
  };
}

// How the ranks run and exchange: threads, time limit, data, buckets, staging.
std::vector<SettingRow> execution_rows() {
  return {
      integer_row("threads_per_rank", "a non-negative integer (0 = cores / ranks)",
                  "LibTorch and OpenBLAS threads per rank (0 = cores / ranks)", {0, 1024},
                  &PointSettings::threads_per_rank),
      number_row("timeout_s", kTimeLimitExpected, "wall-clock limit of the point, in seconds", true,
                 static_cast<int64_t>(kMaxTimeLimitS), &PointSettings::timeout_s),
      data_path_row(),
      number_row("bucket_mb", "a positive number up to 4096", "gradient bucket size, MiB (25 as in PyTorch DDP)", true,
                 4096, &PointSettings::bucket_mb),
      boolean_row("overlap", "reduce each bucket during the backward pass, as soon as its gradients are ready",
                  &PointSettings::overlap),
      integer_row("staging_chunk_bytes", kStagingChunkExpected,
                  "device cuda, a backend that adds up in host memory: buffers larger than this are copied through "
                  "pinned host memory in chunks of this many bytes, pipelined (copy out, reduce, copy back)",
                  {4096, int64_t{1} << 30, 4}, &PointSettings::staging_chunk_bytes),
  };
}

// Faults injected on purpose, the timeline, and which build runs the point.
std::vector<SettingRow> instrument_rows() {
  return {
      number_row("inject_comm_delay_us", "a non-negative number of microseconds up to 10000000",
                 "fault injection: every backend call waits this long first, to check that a regression gate "
                 "fires (harness check ignores it when matching points)",
                 false, 10000000, &PointSettings::inject_comm_delay_us),
      number_row("inject_compute_delay_ms", "a non-negative number of milliseconds up to 100000",
                 "fault injection: rank inject_compute_delay_rank sleeps this long inside every step's compute, a "
                 "straggler on purpose, to check that the results name it (training)",
                 false, 100000, &PointSettings::inject_compute_delay_ms),
      integer_row("inject_compute_delay_rank", "a non-negative integer below ranks",
                  "the rank that inject_compute_delay_ms delays", {0, 4095}, &PointSettings::inject_compute_delay_rank),
      boolean_row("timeline",
                  "write logs/<id>.trace.json: a Chrome trace (Perfetto, chrome://tracing) of every rank during a "
                  "sample of steps (the first 10 timed ones and 40 spread over the rest)",
                  &PointSettings::timeline),
      target_row(),
      build_row(),
  };
}

}  // namespace

std::vector<SettingRow> common_setting_rows() {
  std::vector<SettingRow> rows;
  for (auto group : {placement_rows(), training_rows(), execution_rows(), instrument_rows()}) {
    rows.insert(rows.end(), std::make_move_iterator(group.begin()), std::make_move_iterator(group.end()));
  }
  return rows;
}

}  // namespace harness
