// gpt's settings, its text file's windows and its checks, without LibTorch (gpt.h): validation
// reads them before anything runs.
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/study/owned_setting_rows.h"
#include "workloads/gpt.h"
#include "workloads/resnet.h"  // kMaxSyntheticBytes: the same memory bound as synthetic images

namespace harness {
namespace {

constexpr int64_t kMaxTextBytes = int64_t{1} << 32;  // a byte-level text file is read whole on every rank

int64_t sequence_bytes(const GptOptions& options) { return int64_t{8} * (options.seq_len + 1); }

}  // namespace

std::vector<SettingRow> gpt_setting_rows() {
  const GptOptions defaults;
  return {
      owned_integer_setting("n_layer", "an integer from 1 to 96", "workload gpt: transformer blocks", {1, 96},
                            defaults.n_layer),
      owned_integer_setting("n_head", "an integer from 1 to 128", "workload gpt: attention heads per block",
                            {1, 128}, defaults.n_head),
      owned_integer_setting("d_model", "an integer from 8 to 16384", "workload gpt: the model's width (a multiple "
                            "of n_head)", {8, 16384}, defaults.d_model),
      owned_integer_setting("seq_len", "an integer from 2 to 8192", "workload gpt: tokens per sequence (the "
                            "context)", {2, 8192}, defaults.seq_len),
      owned_integer_setting("vocab", "an integer from 2 to 1000000", "workload gpt: vocabulary size (at least 256 "
                            "with a byte-level text file; GPT-2's is 50257)", {2, 1000000}, defaults.vocab),
  };
}

GptOptions gpt_options(const PointSettings& settings) {
  GptOptions options;
  options.n_layer = settings.option("n_layer", options.n_layer);
  options.n_head = settings.option("n_head", options.n_head);
  options.d_model = settings.option("d_model", options.d_model);
  options.seq_len = settings.option("seq_len", options.seq_len);
  options.vocab = settings.option("vocab", options.vocab);
  return options;
}

int64_t gpt_parameter_count(const GptOptions& o) {
  const int64_t d = o.d_model;
  const int64_t block = 2 * (2 * d)             // two LayerNorms
                        + (d * 3 * d + 3 * d)   // query, key, value
                        + (d * d + d)           // attention's output projection
                        + (d * 4 * d + 4 * d)   // MLP up
                        + (4 * d * d + d);      // MLP down
  return int64_t{o.vocab} * d + int64_t{o.seq_len} * d + o.n_layer * block + 2 * d;
}

TextWindows gpt_text_windows(const PointSettings& settings) {
  const GptOptions options = gpt_options(settings);
  std::error_code error;
  const std::filesystem::path path = settings.data_path;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::is_regular_file(status)) {
    throw ConfigError(fmt::format("data_path: {}: expected a text file for workload gpt, {}", path.string(),
                                  std::filesystem::exists(status) ? "got something else" : "no such file"));
  }
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, error));
  if (error || size > kMaxTextBytes) {
    throw ConfigError(fmt::format("data_path: {}: expected a text file of at most {} bytes, got {}", path.string(),
                                  kMaxTextBytes, error ? "one whose size cannot be read" : std::to_string(size)));
  }
  // Windows of seq_len + 1 bytes that start seq_len apart: each gives seq_len next-token targets.
  const int64_t windows = size > 0 ? (size - 1) / options.seq_len : 0;
  if (windows < 2) {
    throw ConfigError(fmt::format("data_path: {}: {} bytes give fewer than 2 windows of seq_len + 1 = {} bytes "
                                  "(one to train on, one held out)",
                                  path.string(), size, options.seq_len + 1));
  }
  const int64_t held_out = settings.test_size > 0 ? std::min(settings.test_size, windows - 1)
                                                  : std::max<int64_t>(1, windows / 10);
  return {windows - held_out, held_out};
}

SampleLimits gpt_limits(const PointSettings& settings) {
  if (!settings.data_path.empty()) {
    const int64_t train = gpt_text_windows(settings).train;
    return {train, train};
  }
  const int64_t most = kMaxSyntheticBytes / sequence_bytes(gpt_options(settings));
  if (settings.test_size > most) {
    throw ConfigError(fmt::format(
        "test_size: expected at most {} (the synthetic gpt sequences that fit in memory), got {}", most,
        settings.test_size));
  }
  return {std::min(kDefaultGptSequences, most), most};
}

std::optional<SettingProblem> gpt_check(const PointSettings& settings, const PointShape& /*shape*/) {
  const GptOptions options = gpt_options(settings);
  if (options.d_model % options.n_head != 0) {
    return SettingProblem{"d_model", fmt::format("expected a multiple of n_head ({}): each head takes d_model / "
                                                 "n_head of the width, got {}",
                                                 options.n_head, options.d_model)};
  }
  if (!settings.data_path.empty() && options.vocab < 256) {
    return SettingProblem{"vocab", fmt::format("expected at least 256 with a byte-level text file (data_path), "
                                               "got {}",
                                               options.vocab)};
  }
  return std::nullopt;
}

}  // namespace harness
