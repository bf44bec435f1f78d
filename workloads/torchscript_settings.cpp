// torchscript's settings, its model file's checks and its data limits, without LibTorch
// (torchscript.h): validation reads them before anything runs.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <numeric>
#include <system_error>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/option_rows.h"
#include "harness/common/resources.h"
#include "harness/study/owned_setting_rows.h"
#include "workloads/iris_data.h"
#include "workloads/iris_mlp.h"
#include "workloads/mnist_cnn.h"
#include "workloads/resnet.h"  // kDefaultSynthetic*, kMaxSyntheticBytes: synthetic data as resnet's
#include "workloads/torchscript.h"

namespace harness {
namespace {

constexpr std::string_view kInputShapeExpected = "an array of 1 to 4 positive integers (one sample's shape)";
constexpr int64_t kMaxSampleElements = int64_t{1} << 24;  // 64 MiB of float32 per sample

// Little-endian integers of the zip format.
uint32_t read_u16(const unsigned char* p) { return p[0] | (p[1] << 8); }
uint32_t read_u32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t read_u64(const unsigned char* p) { return read_u32(p) | (static_cast<uint64_t>(read_u32(p + 4)) << 32); }

// The names in a zip archive's central directory; "" in `problem` when it is one. Zip64 (archives
// above 4 GiB: a large model's) is read too.
std::vector<std::string> zip_entry_names(std::ifstream& in, std::uintmax_t size, std::string& problem) {
  // The end-of-central-directory record: 22 bytes and a comment of at most 65535, at the end.
  const std::uintmax_t tail_size = std::min<std::uintmax_t>(size, 22 + 65535);
  std::vector<unsigned char> tail(tail_size);
  in.seekg(static_cast<std::streamoff>(size - tail_size));
  in.read(reinterpret_cast<char*>(tail.data()), static_cast<std::streamsize>(tail_size));
  std::ptrdiff_t end = -1;
  for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(tail_size) - 22; i >= 0; --i) {
    if (read_u32(&tail[i]) == 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) {
    problem = "not a zip archive (TorchScript archives are)";
    return {};
  }
  uint64_t entries = read_u16(&tail[end + 10]);
  uint64_t directory_size = read_u32(&tail[end + 12]);
  uint64_t directory_offset = read_u32(&tail[end + 16]);
  if (directory_offset == 0xffffffff && end >= 20 && read_u32(&tail[end - 20]) == 0x07064b50) {
    const uint64_t record_offset = read_u64(&tail[end - 20 + 8]);
    std::array<unsigned char, 56> record{};
    in.seekg(static_cast<std::streamoff>(record_offset));
    in.read(reinterpret_cast<char*>(record.data()), record.size());
    if (!in || read_u32(record.data()) != 0x06064b50) {
      problem = "a zip archive whose zip64 directory is damaged";
      return {};
    }
    entries = read_u64(&record[32]);
    directory_size = read_u64(&record[40]);
    directory_offset = read_u64(&record[48]);
  }
  if (directory_offset + directory_size > size || directory_size > (uint64_t{64} << 20)) {
    problem = "a zip archive whose central directory is damaged or cut short";
    return {};
  }
  std::vector<unsigned char> directory(directory_size);
  in.clear();
  in.seekg(static_cast<std::streamoff>(directory_offset));
  in.read(reinterpret_cast<char*>(directory.data()), static_cast<std::streamsize>(directory_size));
  std::vector<std::string> names;
  std::size_t at = 0;
  for (uint64_t entry = 0; entry < entries; ++entry) {
    if (at + 46 > directory.size() || read_u32(&directory[at]) != 0x02014b50) {
      problem = "a zip archive whose central directory is damaged";
      return {};
    }
    const std::size_t name_length = read_u16(&directory[at + 28]);
    const std::size_t skipped = name_length + read_u16(&directory[at + 30]) + read_u16(&directory[at + 32]);
    if (at + 46 + skipped > directory.size()) {
      problem = "a zip archive whose central directory is damaged";
      return {};
    }
    names.emplace_back(reinterpret_cast<const char*>(&directory[at + 46]), name_length);
    at += 46 + skipped;
  }
  return names;
}

// The model file's problem as a ConfigError at model_path.
[[noreturn]] void fail_model_file(const std::filesystem::path& path, const std::string& problem) {
  throw ConfigError(fmt::format("model_path: expected a TorchScript archive (torch.jit.save), got {}: {}",
                                path.string(), problem));
}

std::vector<int64_t> read_input_shape(const Json& value, const std::string& where) {
  if (!value.is_array() || value.empty() || value.size() > 4) fail_expected(where, kInputShapeExpected, value);
  std::vector<int64_t> shape;
  for (std::size_t i = 0; i < value.size(); ++i) {
    shape.push_back(read_integer(value[i], fmt::format("{}[{}]", where, i), IntegerBounds{1, kMaxSampleElements},
                                 "a positive integer"));
  }
  const int64_t elements = std::accumulate(shape.begin(), shape.end(), int64_t{1}, [](int64_t a, int64_t b) {
    return std::min(a * b, kMaxSampleElements + 1);
  });
  if (elements > kMaxSampleElements) {
    fail_expected(where, fmt::format("{}, at most {} elements", kInputShapeExpected, kMaxSampleElements), value);
  }
  return shape;
}

std::string shape_text(const std::vector<int64_t>& shape) { return Json(shape).dump(); }

}  // namespace

std::vector<SettingRow> torchscript_setting_rows() {
  const TorchScriptOptions defaults;
  return {
      owned_setting("model_path", "the path of a TorchScript archive (torch.jit.save)",
                    "workload torchscript: the model file, from the current directory or the harness's data "
                    "folder (models/fashion_convnet.pt ships there)",
                    R"({"type": "string"})", defaults.model_path,
                    [](const Json& value, const std::string& where) {
                      // "" is the default, "none": a torchscript point without one is refused with the
                      // others' data checks (torchscript_limits).
                      constexpr std::string_view kExpected = "a path (at most 4096 bytes, no control characters)";
                      if (!value.is_string()) fail_expected(where, kExpected, value);
                      const auto& path = value.get_ref<const std::string&>();
                      if (path.size() > 4096 || std::any_of(path.begin(), path.end(), [](char c) {
                            return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                          })) {
                        fail_expected(where, kExpected, value);
                      }
                      return Json(path);
                    }),
      owned_setting("input_shape", kInputShapeExpected,
                    "workload torchscript: one sample's shape, the batch dimension left out ([] = the data's: "
                    "[4] for iris, [1, 28, 28] for mnist)",
                    R"({"type": "array", "maxItems": 4, "items": {"type": "integer", "minimum": 1}})",
                    Json::array(), [](const Json& value, const std::string& where) {
                      if (value.is_array() && value.empty()) return Json::array();
                      return Json(read_input_shape(value, where));
                    }),
      owned_integer_setting("classes", "an integer from 2 to 100000 (0 = the data's)",
                            "workload torchscript: the model's outputs per sample (0 = the data's: 3 for iris, 10 for "
                            "mnist)",
                            {0, 100000}, defaults.classes),
      owned_setting("loss", "\"cross_entropy\" or \"mse\"",
                    "workload torchscript: cross-entropy of the outputs as logits, or squared error against the "
                    "one-hot labels",
                    choice_schema({"cross_entropy", "mse"}), defaults.loss,
                    [](const Json& value, const std::string& where) {
                      return Json(read_choice(value, where, {"cross_entropy", "mse"}));
                    }),
      owned_setting("model_data", "\"synthetic\", \"iris\" or \"mnist\"",
                    "workload torchscript: random inputs and labels of input_shape and classes, the Iris "
                    "measurements, or MNIST-format images from data_path (default Fashion-MNIST)",
                    choice_schema({"synthetic", "iris", "mnist"}), defaults.data,
                    [](const Json& value, const std::string& where) {
                      return Json(read_choice(value, where, {"synthetic", "iris", "mnist"}));
                    }),
  };
}

TorchScriptOptions torchscript_options(const PointSettings& settings) {
  TorchScriptOptions options;
  options.model_path = settings.option("model_path", options.model_path);
  options.input_shape = settings.option("input_shape", options.input_shape);
  options.classes = settings.option("classes", options.classes);
  options.loss = settings.option("loss", options.loss);
  options.data = settings.option("model_data", options.data);
  return options;
}

TorchScriptShape torchscript_shape(const PointSettings& settings) {
  const TorchScriptOptions options = torchscript_options(settings);
  TorchScriptShape shape{options.input_shape, options.classes};
  if (options.data == "iris") {
    if (shape.input_shape.empty()) shape.input_shape = {IrisData::kFeatures};
    if (shape.classes == 0) shape.classes = IrisData::kClasses;
  } else if (options.data == "mnist") {
    if (shape.input_shape.empty()) shape.input_shape = {1, 28, 28};
    if (shape.classes == 0) shape.classes = 10;
  }
  return shape;
}

std::filesystem::path torchscript_model_file(const PointSettings& settings) {
  const std::filesystem::path named = torchscript_options(settings).model_path;
  std::error_code error;
  if (named.is_absolute() || std::filesystem::exists(named, error)) return named;
  const std::filesystem::path shipped = data_folder() / named;
  return std::filesystem::exists(shipped, error) ? shipped : named;
}

std::string torchscript_archive_problem(const std::filesystem::path& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) return "no such file";
  if (!std::filesystem::is_regular_file(status)) return "not a regular file";
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  if (error || !in) return fmt::format("cannot be read: {}", std::strerror(errno));
  std::string problem;
  const std::vector<std::string> names = zip_entry_names(in, size, problem);
  if (!problem.empty()) return problem;
  // torch.jit.save writes ARCHIVE/data.pkl (the module's attributes), ARCHIVE/code/ (its methods'
  // TorchScript) and ARCHIVE/constants.pkl; torch.save writes data.pkl alone.
  const auto has = [&names](std::string_view part) {
    return std::any_of(names.begin(), names.end(),
                       [part](const std::string& name) { return name.find(part) != std::string::npos; });
  };
  if (!has("data.pkl")) return "a zip archive without data.pkl (not saved by PyTorch)";
  if (!has("/code/")) {
    return "a PyTorch archive without TorchScript code (saved by torch.save; export with "
           "torch.jit.script(model).save(path))";
  }
  return "";
}

SampleLimits torchscript_limits(const PointSettings& settings) {
  const TorchScriptOptions options = torchscript_options(settings);
  if (options.model_path.empty()) {
    throw ConfigError("model_path: expected the path of a TorchScript archive (torch.jit.save), got none");
  }
  const std::filesystem::path file = torchscript_model_file(settings);
  if (const std::string problem = torchscript_archive_problem(file); !problem.empty()) {
    fail_model_file(file, problem);
  }
  if (options.data == "iris") {
    const int64_t rows = iris_mlp_train_samples(settings);
    return {rows, rows};
  }
  if (options.data == "mnist") {
    const int64_t images = mnist_cnn_train_samples(settings);
    return {images, images};
  }
  const TorchScriptShape shape = torchscript_shape(settings);
  if (shape.input_shape.empty()) {
    throw ConfigError(
        "input_shape: expected one sample's shape with model_data \"synthetic\" (e.g. [3, 32, 32]), got []");
  }
  if (shape.classes == 0) {
    throw ConfigError("classes: expected the model's outputs per sample with model_data \"synthetic\", got 0");
  }
  const int64_t bytes_per_sample =
      4 * std::accumulate(shape.input_shape.begin(), shape.input_shape.end(), int64_t{1}, std::multiplies<>());
  const int64_t most = std::max<int64_t>(1, kMaxSyntheticBytes / bytes_per_sample);
  if (settings.test_size > most) {
    throw ConfigError(fmt::format(
        "test_size: expected at most {} (the synthetic torchscript samples that fit in memory), got {}", most,
        settings.test_size));
  }
  return {std::min(kDefaultSyntheticImages, most), most};
}

std::optional<SettingProblem> torchscript_check(const PointSettings& settings, const PointShape& /*shape*/) {
  const TorchScriptOptions options = torchscript_options(settings);
  const TorchScriptShape shape = torchscript_shape(settings);
  if (options.classes == 1) {
    return SettingProblem{"classes", "expected an integer from 2 to 100000 (0 = the data's), got 1"};
  }
  const auto data_shape = [&]() -> std::pair<std::vector<int64_t>, int64_t> {
    if (options.data == "iris") return {{IrisData::kFeatures}, IrisData::kClasses};
    return {{1, 28, 28}, 10};
  };
  if (options.data != "synthetic") {
    const auto [input, classes] = data_shape();
    if (shape.input_shape != input) {
      return SettingProblem{"input_shape", fmt::format("expected {} (or []) with model_data \"{}\", got {}",
                                                       shape_text(input), options.data, shape_text(shape.input_shape))};
    }
    if (shape.classes != classes) {
      return SettingProblem{"classes", fmt::format("expected {} (or 0) with model_data \"{}\", got {}", classes,
                                                   options.data, shape.classes)};
    }
  } else if (settings.target && settings.target->metric != "train_loss") {
    return SettingProblem{"target", fmt::format("expected the metric \"train_loss\" with model_data \"synthetic\": "
                                                "its held-out labels are random, so {} means nothing, got \"{}\"",
                                                settings.target->metric, settings.target->metric)};
  }
  return std::nullopt;
}

}  // namespace harness
