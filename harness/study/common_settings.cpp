// The rows of the settings every point has (settings.h); kinds, backends and workloads add their
// own (settings.cpp assembles the table).
#include "harness/study/common_settings.h"

#include <algorithm>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "harness/common/json_values.h"
#include "harness/common/text.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr std::string_view kStagingChunkExpected = "a multiple of 4 bytes from 4096 to 1073741824";

// Texts built for rows, which keep views of them; a deque never moves its elements.
std::string_view kept_text(std::string text) {
  static std::deque<std::string> texts;
  return texts.emplace_back(std::move(text));
}

// A row of a string setting with a fixed set of values.
SettingRow choice_row(std::string_view key, std::string_view help, std::string_view json_schema,
                      std::initializer_list<std::string_view> choices,
                      std::string PointSettings::*field) {
  const std::string_view expected = kept_text(choices_text(choices));
  const std::vector<std::string_view> values(choices);
  return {key, expected, help, json_schema,
          [expected, values, field](PointSettings& s, const Json& v, const std::string& where) {
            if (!v.is_string() ||
                std::find(values.begin(), values.end(), v.get_ref<const std::string&>()) == values.end()) {
              fail_expected(where, expected, v);
            }
            s.*field = v.get<std::string>();
          },
          [field](const PointSettings& s) { return Json(s.*field); }};
}

// A row of an int setting in [min, max].
SettingRow int_row(std::string_view key, std::string_view expected, std::string_view help,
                   std::string_view json_schema, int64_t min, int64_t max, int PointSettings::*field) {
  return {key, expected, help, json_schema,
          [expected, min, max, field](PointSettings& s, const Json& v, const std::string& where) {
            s.*field = static_cast<int>(read_integer(v, where, min, max, expected));
          },
          [field](const PointSettings& s) { return Json(s.*field); }};
}

SettingRow int64_row(std::string_view key, std::string_view expected, std::string_view help,
                     std::string_view json_schema, int64_t PointSettings::*field) {
  return {key, expected, help, json_schema,
          [expected, field](PointSettings& s, const Json& v, const std::string& where) {
            s.*field = read_integer(v, where, 0, kMaxInt64, expected);
          },
          [field](const PointSettings& s) { return Json(s.*field); }};
}

SettingRow bool_row(std::string_view key, std::string_view help, bool PointSettings::*field) {
  return {key, "true or false", help, R"({"type": "boolean"})",
          [field](PointSettings& s, const Json& v, const std::string& where) {
            s.*field = read_boolean(v, where);
          },
          [field](const PointSettings& s) { return Json(s.*field); }};
}

SettingRow positive_number_row(std::string_view key, std::string_view help, double max,
                               double PointSettings::*field) {
  const std::string_view expected =
      max > 0 ? kept_text(fmt::format("a positive number up to {:g}", max)) : "a positive number";
  const std::string_view json_schema =
      max > 0 ? kept_text(fmt::format(R"({{"type": "number", "exclusiveMinimum": 0, "maximum": {:g}}})", max))
              : R"({"type": "number", "exclusiveMinimum": 0})";
  return {key, expected, help, json_schema,
          [expected, max, field](PointSettings& s, const Json& v, const std::string& where) {
            const double value = read_positive_number(v, where);
            if (max > 0 && value > max) fail_expected(where, expected, v);
            s.*field = value;
          },
          [field](const PointSettings& s) { return Json(s.*field); }};
}

}  // namespace

std::vector<SettingRow> common_setting_rows() {
  return {
      {"kind", "\"train\" or \"comm\"",
       "train: data-parallel training; comm: message-size sweep of the backend alone",
       R"({"enum": ["train", "comm"]})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.kind = read_choice(v, where, {"train", "comm"}) == "train" ? Kind::kTrain : Kind::kComm;
       },
       [](const PointSettings& s) { return Json(std::string(kind_name(s.kind))); }},
      {"workload", "a workload name", "what each rank trains (see Workloads)",
       R"({"type": "string"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.workload = read_nonempty_string(v, where, "a workload name");
       },
       [](const PointSettings& s) { return Json(s.workload); }},
      choice_row("engine",
                 "torch: LibTorch autograd; blas: forward and backward by hand over cblas_sgemm "
                 "(iris_mlp)",
                 R"({"enum": ["torch", "blas"]})", {"torch", "blas"}, &PointSettings::engine),
      {"backend", "a backend name", "how gradients are synchronised (see Backends)",
       R"({"type": "string"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.backend = read_nonempty_string(v, where, "a backend name");
       },
       [](const PointSettings& s) { return Json(s.backend); }},
      choice_row("device", "where tensors live: cpu or cuda", R"({"enum": ["cpu", "cuda"]})",
                 {"cpu", "cuda"}, &PointSettings::device),
      int_row("ranks", "a positive integer (at most 4096)", "MPI ranks (processes) for the point",
              R"({"type": "integer", "minimum": 1, "maximum": 4096})", 1, 4096, &PointSettings::ranks),
      int_row("nodes", "a positive integer (at most 4096)",
              "nodes the ranks are spread over (1: one machine; more needs a cluster launcher)",
              R"({"type": "integer", "minimum": 1, "maximum": 4096})", 1, 4096, &PointSettings::nodes),
      int_row("ranks_per_node", "a non-negative integer (0 = as the launcher places them)",
              "ranks on each node; nodes × ranks_per_node must equal ranks (0: the launcher spreads them)",
              R"({"type": "integer", "minimum": 0, "maximum": 4096})", 0, 4096,
              &PointSettings::ranks_per_node),
      int_row("batch_size", "a positive integer",
              "samples per step: per training rank (scaling weak) or in all (scaling strong)",
              R"({"type": "integer", "minimum": 1, "maximum": 2147483647})", 1, kMaxInt,
              &PointSettings::batch_size),
      choice_row("scaling",
                 "weak: batch_size per rank; strong: batch_size is the global batch, split over "
                 "the ranks",
                 R"({"enum": ["weak", "strong"]})", {"weak", "strong"}, &PointSettings::scaling),
      int64_row("dataset_size", "a non-negative integer (0 = whole training set)",
                "training samples used (0 = all)", R"({"type": "integer", "minimum": 0})",
                &PointSettings::dataset_size),
      int64_row("test_size", "a non-negative integer (0 = the whole held-out set)",
                "held-out samples evaluated after each epoch (0 = all)",
                R"({"type": "integer", "minimum": 0})", &PointSettings::test_size),
      int_row("epochs", "a positive integer", "passes over the training set",
              R"({"type": "integer", "minimum": 1, "maximum": 2147483647})", 1, kMaxInt,
              &PointSettings::epochs),
      positive_number_row("lr", "SGD learning rate", 0, &PointSettings::lr),
      choice_row("lr_scaling", "linear: lr × global batch / lr_reference_batch, after warmup_epochs",
                 R"({"enum": ["none", "linear"]})", {"none", "linear"}, &PointSettings::lr_scaling),
      int_row("lr_reference_batch", "a non-negative integer (0 = the per-rank batch)",
              "lr_scaling linear: the batch lr is meant for (0 = the per-rank batch)",
              R"({"type": "integer", "minimum": 0, "maximum": 2147483647})", 0, kMaxInt,
              &PointSettings::lr_reference_batch),
      {"warmup_epochs", "a non-negative number",
       "lr_scaling linear: epochs of linear ramp from lr to the scaled rate",
       R"({"type": "number", "minimum": 0})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         s.warmup_epochs = read_non_negative_number(v, where);
       },
       [](const PointSettings& s) { return Json(s.warmup_epochs); }},
      int_row("warmup_steps", "a non-negative integer",
              "first steps that train but are not timed (allocation, connections warm up)",
              R"({"type": "integer", "minimum": 0, "maximum": 2147483647})", 0, kMaxInt,
              &PointSettings::warmup_steps),
      int_row("loss_every", "a non-negative integer (0 = about 100 values per point)",
              "steps per value of the training-loss curve (mean over them, all ranks); 0 = about 100 "
              "values per point",
              R"({"type": "integer", "minimum": 0, "maximum": 2147483647})", 0, kMaxInt,
              &PointSettings::loss_every),
      int64_row("seed", "a non-negative integer", "seed for initial weights, splits and shuffles",
                R"({"type": "integer", "minimum": 0})", &PointSettings::seed),
      int_row("threads_per_rank", "a non-negative integer (0 = cores / ranks)",
              "LibTorch and OpenBLAS threads per rank (0 = cores / ranks)",
              R"({"type": "integer", "minimum": 0, "maximum": 1024})", 0, 1024,
              &PointSettings::threads_per_rank),
      {"timeout_s", kTimeLimitExpected, "wall-clock limit of the point, in seconds",
       R"({"type": "number", "exclusiveMinimum": 0, "maximum": 31536000})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         const double value = read_positive_number(v, where);
         if (value > kMaxTimeLimitS) fail_expected(where, kTimeLimitExpected, v);
         s.timeout_s = value;
       },
       [](const PointSettings& s) { return Json(s.timeout_s); }},
      {"data_path", "a path (at most 4096 bytes, no control characters)",
       "training data: a CSV file for iris_mlp, a directory of IDX files for mnist_cnn (empty = "
       "the workload's own)",
       R"({"type": "string"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         // Errors about the data echo the path: it must fit on one line.
         constexpr const char* kExpected = "a path (at most 4096 bytes, no control characters)";
         if (!v.is_string() || v.get_ref<const std::string&>().size() > 4096) fail_expected(where, kExpected, v);
         const auto& path = v.get_ref<const std::string&>();
         if (std::any_of(path.begin(), path.end(), [](char c) {
               return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
             })) {
           fail_expected(where, kExpected, v);
         }
         s.data_path = path;
       },
       [](const PointSettings& s) { return Json(s.data_path); }},
      positive_number_row("bucket_mb", "gradient bucket size, MiB (25 as in PyTorch DDP)", 4096,
                          &PointSettings::bucket_mb),
      bool_row("overlap",
               "reduce each bucket during the backward pass, as soon as its gradients are ready",
               &PointSettings::overlap),
      {"staging_chunk_bytes", kStagingChunkExpected,
       "device cuda, a backend that adds up in host memory: buffers larger than this are copied through "
       "pinned host memory in chunks of this many bytes, pipelined (copy out, reduce, copy back)",
       R"({"type": "integer", "minimum": 4096, "maximum": 1073741824, "multipleOf": 4})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         const int64_t bytes = read_integer(v, where, 4096, int64_t{1} << 30, kStagingChunkExpected);
         if (bytes % 4 != 0) fail_expected(where, kStagingChunkExpected, v);
         s.staging_chunk_bytes = bytes;
       },
       [](const PointSettings& s) { return Json(s.staging_chunk_bytes); }},
      {"inject_comm_delay_us", "a non-negative number of microseconds up to 10000000",
       "fault injection: every backend call waits this long first, to check that a regression "
       "gate fires (harness check ignores it when matching points)",
       R"({"type": "number", "minimum": 0, "maximum": 10000000})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         const double delay_us = read_non_negative_number(v, where);
         if (delay_us > 1e7) fail_expected(where, "a non-negative number of microseconds up to 10000000", v);
         s.inject_comm_delay_us = delay_us;
       },
       [](const PointSettings& s) { return Json(s.inject_comm_delay_us); }},
      {"inject_compute_delay_ms", "a non-negative number of milliseconds up to 100000",
       "fault injection: rank inject_compute_delay_rank sleeps this long inside every step's compute, "
       "a straggler on purpose, to check that the results name it (training)",
       R"({"type": "number", "minimum": 0, "maximum": 100000})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         const double delay_ms = read_non_negative_number(v, where);
         if (delay_ms > 1e5) fail_expected(where, "a non-negative number of milliseconds up to 100000", v);
         s.inject_compute_delay_ms = delay_ms;
       },
       [](const PointSettings& s) { return Json(s.inject_compute_delay_ms); }},
      int_row("inject_compute_delay_rank", "a non-negative integer below ranks",
              "the rank that inject_compute_delay_ms delays", R"({"type": "integer", "minimum": 0, "maximum": 4095})",
              0, 4095, &PointSettings::inject_compute_delay_rank),
      bool_row("timeline",
               "write logs/<id>.trace.json: a Chrome trace (Perfetto, chrome://tracing) of every rank "
               "during a sample of steps (the first 10 timed ones and 40 spread over the rest)",
               &PointSettings::timeline),
      {"build", "a build name (letters, digits, '_', '.', '-'; \"\" = the running harness)",
       "which harness build's rank program runs the point: a name from the experiment's \"builds\" "
       "or harness run --build NAME=PATH (\"\" = the running harness); compares builds interleaved",
       R"({"type": "string", "pattern": "^([A-Za-z0-9_][A-Za-z0-9_.-]{0,99})?$"})",
       [](PointSettings& s, const Json& v, const std::string& where) {
         constexpr const char* kExpected = "a build name (letters, digits, '_', '.', '-'; \"\" = the running harness)";
         if (!v.is_string()) fail_expected(where, kExpected, v);
         const auto& name = v.get_ref<const std::string&>();
         if (!name.empty() && !is_plain_name(name)) fail_expected(where, kExpected, v);
         s.build = name;
       },
       [](const PointSettings& s) { return Json(s.build); }},
  };
}

}  // namespace harness
