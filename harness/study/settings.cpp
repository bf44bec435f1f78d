#include "harness/study/settings.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

[[noreturn]] void fail(const std::string& where, std::string_view expected, const Json& got) {
  throw ConfigError(fmt::format("{}: expected {}, got {}", where, expected, describe_json(got)));
}

int64_t read_integer(const Json& value, const std::string& where, int64_t min, int64_t max,
                     std::string_view expected) {
  // JSON has one number type: accept 4 and 4.0, refuse 4.5 and "4".
  if (value.is_number_integer()) {
    const auto number = value.get<int64_t>();
    if (number >= min && number <= max) return number;
  } else if (value.is_number_float()) {
    const double number = value.get<double>();
    // Compare below 2^63 exactly: (double)INT64_MAX rounds up to 2^63, whose cast is undefined.
    constexpr double kTwoTo63 = 9223372036854775808.0;
    if (std::trunc(number) == number && number >= static_cast<double>(min) && number < kTwoTo63 &&
        number <= static_cast<double>(max)) {
      return static_cast<int64_t>(number);
    }
  }
  fail(where, expected, value);
}

double read_positive_number(const Json& value, const std::string& where) {
  if (value.is_number() && value.get<double>() > 0 && std::isfinite(value.get<double>())) {
    return value.get<double>();
  }
  fail(where, "a positive number", value);
}

std::string read_string(const Json& value, const std::string& where, std::string_view expected) {
  if (value.is_string() && !value.get<std::string>().empty()) return value.get<std::string>();
  fail(where, expected, value);
}

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();

// Message sizes are whole float32 elements, at most 1 GiB.
int64_t read_float_bytes(const Json& value, const std::string& where) {
  constexpr const char* kExpected = "a positive multiple of 4 (bytes of float32), at most 2^30";
  const int64_t bytes = read_integer(value, where, 4, int64_t{1} << 30, kExpected);
  if (bytes % 4 != 0) fail(where, kExpected, value);
  return bytes;
}
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

using Reader = std::function<void(PointSettings&, const Json&, const std::string&)>;

struct SettingEntry {
  SettingInfo info;
  Reader read;
  std::function<Json(const PointSettings&)> write;
};

// The single source of truth for keys, their validation and their serialisation.
const std::vector<SettingEntry>& entries() {
  static const std::vector<SettingEntry> table = {
      {{"kind", "\"train\" or \"comm\"",
        "train: data-parallel training; comm: message-size sweep of the backend alone",
        R"({"enum": ["train", "comm"]})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_string() || (v != "train" && v != "comm")) fail(w, "\"train\" or \"comm\"", v);
         s.kind = v.get<std::string>();
       },
       [](const auto& s) { return Json(s.kind); }},
      {{"workload", "a workload name", "what each rank trains (see Workloads)",
        R"({"type": "string"})"},
       [](auto& s, const Json& v, const auto& w) { s.workload = read_string(v, w, "a workload name"); },
       [](const auto& s) { return Json(s.workload); }},
      {{"engine", "\"torch\" or \"blas\"",
        "torch: LibTorch autograd; blas: forward and backward by hand over cblas_sgemm (iris_mlp)",
        R"({"enum": ["torch", "blas"]})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_string() || (v != "torch" && v != "blas")) fail(w, "\"torch\" or \"blas\"", v);
         s.engine = v.get<std::string>();
       },
       [](const auto& s) { return Json(s.engine); }},
      {{"backend", "a backend name", "how gradients are synchronised (see Backends)",
        R"({"type": "string"})"},
       [](auto& s, const Json& v, const auto& w) { s.backend = read_string(v, w, "a backend name"); },
       [](const auto& s) { return Json(s.backend); }},
      {{"device", "\"cpu\" or \"cuda\"", "where tensors live: cpu or cuda",
        R"({"enum": ["cpu", "cuda"]})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_string() || (v != "cpu" && v != "cuda")) fail(w, "\"cpu\" or \"cuda\"", v);
         s.device = v.get<std::string>();
       },
       [](const auto& s) { return Json(s.device); }},
      {{"ranks", "a positive integer", "MPI ranks (processes) for the point",
        R"({"type": "integer", "minimum": 1, "maximum": 4096})"},
       [](auto& s, const Json& v, const auto& w) {
         s.ranks = static_cast<int>(read_integer(v, w, 1, 4096, "a positive integer (at most 4096)"));
       },
       [](const auto& s) { return Json(s.ranks); }},
      {{"batch_size", "a positive integer", "samples per rank per step",
        R"({"type": "integer", "minimum": 1, "maximum": 2147483647})"},
       [](auto& s, const Json& v, const auto& w) {
         s.batch_size = static_cast<int>(read_integer(v, w, 1, kMaxInt, "a positive integer"));
       },
       [](const auto& s) { return Json(s.batch_size); }},
      {{"scaling", "\"weak\" or \"strong\"",
        "weak: batch_size per rank; strong: batch_size is the global batch, split over the ranks",
        R"({"enum": ["weak", "strong"]})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_string() || (v != "weak" && v != "strong")) fail(w, "\"weak\" or \"strong\"", v);
         s.scaling = v.get<std::string>();
       },
       [](const auto& s) { return Json(s.scaling); }},
      {{"dataset_size", "a non-negative integer (0 = whole training set)",
        "training samples used (0 = all)",
        R"({"type": "integer", "minimum": 0})"},
       [](auto& s, const Json& v, const auto& w) {
         s.dataset_size =
             read_integer(v, w, 0, kMaxInt64, "a non-negative integer (0 = whole training set)");
       },
       [](const auto& s) { return Json(s.dataset_size); }},
      {{"test_size", "a non-negative integer (0 = the whole held-out set)",
        "held-out samples evaluated after each epoch (0 = all)",
        R"({"type": "integer", "minimum": 0})"},
       [](auto& s, const Json& v, const auto& w) {
         s.test_size =
             read_integer(v, w, 0, kMaxInt64, "a non-negative integer (0 = the whole held-out set)");
       },
       [](const auto& s) { return Json(s.test_size); }},
      {{"epochs", "a positive integer", "passes over the training set",
        R"({"type": "integer", "minimum": 1, "maximum": 2147483647})"},
       [](auto& s, const Json& v, const auto& w) {
         s.epochs = static_cast<int>(read_integer(v, w, 1, kMaxInt, "a positive integer"));
       },
       [](const auto& s) { return Json(s.epochs); }},
      {{"lr", "a positive number", "SGD learning rate",
        R"({"type": "number", "exclusiveMinimum": 0})"},
       [](auto& s, const Json& v, const auto& w) { s.lr = read_positive_number(v, w); },
       [](const auto& s) { return Json(s.lr); }},
      {{"lr_scaling", "\"none\" or \"linear\"",
        "linear: lr × global batch / lr_reference_batch, after warmup_epochs",
        R"({"enum": ["none", "linear"]})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_string() || (v != "none" && v != "linear")) fail(w, "\"none\" or \"linear\"", v);
         s.lr_scaling = v.get<std::string>();
       },
       [](const auto& s) { return Json(s.lr_scaling); }},
      {{"lr_reference_batch", "a non-negative integer (0 = the per-rank batch)",
        "lr_scaling linear: the batch lr is meant for (0 = the per-rank batch)",
        R"({"type": "integer", "minimum": 0, "maximum": 2147483647})"},
       [](auto& s, const Json& v, const auto& w) {
         s.lr_reference_batch = static_cast<int>(
             read_integer(v, w, 0, kMaxInt, "a non-negative integer (0 = the per-rank batch)"));
       },
       [](const auto& s) { return Json(s.lr_reference_batch); }},
      {{"warmup_epochs", "a non-negative number",
        "lr_scaling linear: epochs of linear ramp from lr to the scaled rate",
        R"({"type": "number", "minimum": 0})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>())) {
           fail(w, "a non-negative number", v);
         }
         s.warmup_epochs = v.get<double>();
       },
       [](const auto& s) { return Json(s.warmup_epochs); }},
      {{"warmup_steps", "a non-negative integer",
        "first steps that train but are not timed (allocation, connections warm up)",
        R"({"type": "integer", "minimum": 0, "maximum": 2147483647})"},
       [](auto& s, const Json& v, const auto& w) {
         s.warmup_steps = static_cast<int>(read_integer(v, w, 0, kMaxInt, "a non-negative integer"));
       },
       [](const auto& s) { return Json(s.warmup_steps); }},
      {{"seed", "a non-negative integer", "seed for initial weights, splits and shuffles",
        R"({"type": "integer", "minimum": 0})"},
       [](auto& s, const Json& v, const auto& w) {
         s.seed = read_integer(v, w, 0, kMaxInt64, "a non-negative integer");
       },
       [](const auto& s) { return Json(s.seed); }},
      {{"threads_per_rank", "a non-negative integer (0 = cores / ranks)",
        "LibTorch and OpenBLAS threads per rank (0 = cores / ranks)",
        R"({"type": "integer", "minimum": 0, "maximum": 1024})"},
       [](auto& s, const Json& v, const auto& w) {
         s.threads_per_rank = static_cast<int>(
             read_integer(v, w, 0, 1024, "a non-negative integer (0 = cores / ranks)"));
       },
       [](const auto& s) { return Json(s.threads_per_rank); }},
      {{"timeout_s", "a positive number", "wall-clock limit of the point, in seconds",
        R"({"type": "number", "exclusiveMinimum": 0})"},
       [](auto& s, const Json& v, const auto& w) { s.timeout_s = read_positive_number(v, w); },
       [](const auto& s) { return Json(s.timeout_s); }},
      {{"data_path", "a path",
        "training data: a CSV file for iris_mlp, a directory of IDX files for mnist_cnn "
        "(empty = the workload's own)",
        R"({"type": "string"})"},
       [](auto& s, const Json& v, const auto& w) {
         // Errors about the data echo the path: it must fit on one line.
         constexpr const char* kExpected = "a path (at most 4096 bytes, no control characters)";
         if (!v.is_string() || v.get_ref<const std::string&>().size() > 4096) fail(w, kExpected, v);
         const auto& path = v.get_ref<const std::string&>();
         if (std::any_of(path.begin(), path.end(), [](char c) {
               return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
             })) {
           fail(w, kExpected, v);
         }
         s.data_path = path;
       },
       [](const auto& s) { return Json(s.data_path); }},
      {{"ps_server_trains", "true or false",
        "backend \"ps\": rank 0 trains too (false: it only serves, p ranks give p-1 workers)",
        R"({"type": "boolean"})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_boolean()) fail(w, "true or false", v);
         s.ps_server_trains = v.get<bool>();
       },
       [](const auto& s) { return Json(s.ps_server_trains); }},
      {{"bucket_mb", "a positive number up to 4096", "gradient bucket size, MiB (25 as in PyTorch DDP)",
        R"({"type": "number", "exclusiveMinimum": 0, "maximum": 4096})"},
       [](auto& s, const Json& v, const auto& w) {
         s.bucket_mb = read_positive_number(v, w);
         if (s.bucket_mb > 4096) fail(w, "a positive number up to 4096", v);
       },
       [](const auto& s) { return Json(s.bucket_mb); }},
      {{"overlap", "true or false",
        "reduce each bucket during the backward pass, as soon as its gradients are ready",
        R"({"type": "boolean"})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_boolean()) fail(w, "true or false", v);
         s.overlap = v.get<bool>();
       },
       [](const auto& s) { return Json(s.overlap); }},
      {{"resnet_depth", "18 or 50", "workload resnet: ResNet-18 or ResNet-50",
        R"({"enum": [18, 50]})"},
       [](auto& s, const Json& v, const auto& w) {
         const int64_t depth = read_integer(v, w, 18, 50, "18 or 50");
         if (depth != 18 && depth != 50) fail(w, "18 or 50", v);
         s.resnet_depth = static_cast<int>(depth);
       },
       [](const auto& s) { return Json(s.resnet_depth); }},
      {{"image_size", "an integer from 32 to 512", "workload resnet: synthetic image side, pixels",
        R"({"type": "integer", "minimum": 32, "maximum": 512})"},
       [](auto& s, const Json& v, const auto& w) {
         s.image_size = static_cast<int>(read_integer(v, w, 32, 512, "an integer from 32 to 512"));
       },
       [](const auto& s) { return Json(s.image_size); }},
      {{"num_classes", "an integer from 2 to 100000", "workload resnet: classes of the random labels",
        R"({"type": "integer", "minimum": 2, "maximum": 100000})"},
       [](auto& s, const Json& v, const auto& w) {
         s.num_classes = static_cast<int>(read_integer(v, w, 2, 100000, "an integer from 2 to 100000"));
       },
       [](const auto& s) { return Json(s.num_classes); }},
      {{"kmeans_k", "a positive integer", "workload kmeans: number of clusters",
        R"({"type": "integer", "minimum": 1, "maximum": 4096})"},
       [](auto& s, const Json& v, const auto& w) {
         s.kmeans_k = static_cast<int>(read_integer(v, w, 1, 4096, "a positive integer (at most 4096)"));
       },
       [](const auto& s) { return Json(s.kmeans_k); }},
      {{"kmeans_tolerance", "a positive number",
        "workload kmeans: stop when no centroid moves farther than this",
        R"({"type": "number", "exclusiveMinimum": 0})"},
       [](auto& s, const Json& v, const auto& w) { s.kmeans_tolerance = read_positive_number(v, w); },
       [](const auto& s) { return Json(s.kmeans_tolerance); }},
      {{"kmeans_data", "\"iris\" or \"blobs\"",
        "workload kmeans: the Iris measurements, or dataset_size synthetic Gaussian-blob points",
        R"({"enum": ["iris", "blobs"]})"},
       [](auto& s, const Json& v, const auto& w) {
         if (!v.is_string() || (v != "iris" && v != "blobs")) fail(w, "\"iris\" or \"blobs\"", v);
         s.kmeans_data = v.get<std::string>();
       },
       [](const auto& s) { return Json(s.kmeans_data); }},
      {{"comm_min_bytes", "a positive multiple of 4", "kind comm: smallest message, bytes",
        R"({"type": "integer", "minimum": 4, "maximum": 1073741824, "multipleOf": 4})"},
       [](auto& s, const Json& v, const auto& w) {
         s.comm_min_bytes = read_float_bytes(v, w);
       },
       [](const auto& s) { return Json(s.comm_min_bytes); }},
      {{"comm_max_bytes", "a positive multiple of 4", "kind comm: largest message, bytes",
        R"({"type": "integer", "minimum": 4, "maximum": 1073741824, "multipleOf": 4})"},
       [](auto& s, const Json& v, const auto& w) {
         s.comm_max_bytes = read_float_bytes(v, w);
       },
       [](const auto& s) { return Json(s.comm_max_bytes); }},
      {{"comm_size_factor", "an integer from 2 to 1024", "kind comm: each size is the last × this",
        R"({"type": "integer", "minimum": 2, "maximum": 1024})"},
       [](auto& s, const Json& v, const auto& w) {
         s.comm_size_factor =
             static_cast<int>(read_integer(v, w, 2, 1024, "an integer from 2 to 1024"));
       },
       [](const auto& s) { return Json(s.comm_size_factor); }},
      {{"comm_iterations", "a positive integer", "kind comm: timed reductions per size",
        R"({"type": "integer", "minimum": 1, "maximum": 100000})"},
       [](auto& s, const Json& v, const auto& w) {
         s.comm_iterations =
             static_cast<int>(read_integer(v, w, 1, 100000, "an integer from 1 to 100000"));
       },
       [](const auto& s) { return Json(s.comm_iterations); }},
      {{"comm_warmup_iterations", "a non-negative integer", "kind comm: untimed reductions first",
        R"({"type": "integer", "minimum": 0, "maximum": 100000})"},
       [](auto& s, const Json& v, const auto& w) {
         s.comm_warmup_iterations =
             static_cast<int>(read_integer(v, w, 0, 100000, "an integer from 0 to 100000"));
       },
       [](const auto& s) { return Json(s.comm_warmup_iterations); }},
  };
  return table;
}

const SettingEntry* find_entry(std::string_view key) {
  for (const auto& entry : entries()) {
    if (entry.info.key == key) return &entry;
  }
  return nullptr;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string_view> setting_keys() {
  std::vector<std::string_view> keys;
  for (const auto& entry : entries()) keys.push_back(entry.info.key);
  return keys;
}

}  // namespace

const std::vector<SettingInfo>& setting_table() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> result;
    for (const auto& entry : entries()) result.push_back(entry.info);
    return result;
  }();
  return infos;
}

void apply_setting(PointSettings& settings, std::string_view key, const Json& value,
                   const std::string& where) {
  const SettingEntry* entry = find_entry(key);
  if (entry == nullptr) {
    const std::string suggestion = closest_name(key, setting_keys());
    throw ConfigError(
        fmt::format("{}: unknown setting {}{}", where, describe_text(key),
                    suggestion.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", suggestion)));
  }
  entry->read(settings, value, where);
}

Json to_json(const PointSettings& settings) {
  Json object = Json::object();
  for (const auto& entry : entries()) object[std::string(entry.info.key)] = entry.write(settings);
  return object;
}

PointSettings settings_from_json(const Json& object, const std::string& where) {
  if (!object.is_object()) fail(where, "an object of settings", object);
  PointSettings settings;
  for (const auto& [key, value] : object.items()) {
    apply_setting(settings, key, value, where + "." + key);
  }
  return settings;
}

WorkerLayout worker_layout(const PointSettings& settings, int rank, int world_size) {
  if (settings.backend == "ps" && !settings.ps_server_trains) {
    return {std::max(1, world_size - 1), rank == 0 ? -1 : rank - 1};
  }
  return {world_size, rank};
}

int64_t per_rank_batch(const PointSettings& settings, int workers) {
  return settings.scaling == "strong" ? settings.batch_size / std::max(1, workers)
                                      : settings.batch_size;
}

int64_t global_batch(const PointSettings& settings, int workers) {
  return per_rank_batch(settings, workers) * workers;
}

double learning_rate(const PointSettings& settings, int workers, double epochs_done) {
  if (settings.lr_scaling != "linear") return settings.lr;
  const double reference =
      settings.lr_reference_batch > 0 ? settings.lr_reference_batch : per_rank_batch(settings, workers);
  const double target = settings.lr * static_cast<double>(global_batch(settings, workers)) / reference;
  if (epochs_done >= settings.warmup_epochs) return target;
  return settings.lr + (target - settings.lr) * epochs_done / settings.warmup_epochs;
}

int resolved_threads_per_rank(const PointSettings& settings, int cores) {
  if (settings.threads_per_rank > 0) return settings.threads_per_rank;
  return std::max(1, cores / std::max(1, settings.ranks));
}

std::string closest_name(std::string_view unknown, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, unknown.size() / 3) + 1;
  for (const auto candidate : candidates) {
    const std::size_t distance = edit_distance(unknown, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best;
}

std::string shortened(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  const std::size_t budget = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  // Whole units only: half a UTF-8 character or half of "\u000a" would garble the message.
  std::size_t end = 0;
  while (end < text.size()) {
    const auto c = static_cast<unsigned char>(text[end]);
    std::size_t unit = 1;
    if (c == '\\' && end + 1 < text.size()) {
      unit = text[end + 1] == 'u' ? 6 : 2;
    } else if (c >= 0xF0) {
      unit = 4;
    } else if (c >= 0xE0) {
      unit = 3;
    } else if (c >= 0xC0) {
      unit = 2;
    }
    if (end + unit > budget) break;
    end += unit;
  }
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string describe_json(const Json& value) {
  constexpr std::size_t kMaxChars = 60;
  // `replace`: a string that is not UTF-8 (not from a parsed file) must not make dump() throw.
  return shortened(value.dump(-1, ' ', false, Json::error_handler_t::replace), kMaxChars);
}

std::string describe_text(std::string_view text) { return describe_json(Json(std::string(text))); }

}  // namespace harness
