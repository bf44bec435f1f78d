#include "harness/study/kind.h"

#include "harness/common/option_rows.h"
#include "harness/study/owned_setting_rows.h"

namespace harness {
namespace {

// Message sizes are whole float32 elements, at most 1 GiB.
constexpr IntegerBounds kFloatBytes{4, int64_t{1} << 30, 4};
constexpr std::string_view kFloatBytesExpected = "a positive multiple of 4 (bytes of float32), at most 2^30";

}  // namespace

std::string_view kind_name(Kind kind) { return kind == Kind::kTrain ? "train" : "comm"; }

std::vector<SettingRow> comm_setting_rows() {
  const CommOptions defaults;
  return {
      owned_setting("comm_min_bytes", kFloatBytesExpected, "kind comm: smallest message, bytes",
                    integer_schema(kFloatBytes), defaults.min_bytes, integer_normaliser(kFloatBytes, kFloatBytesExpected)),
      owned_setting("comm_max_bytes", kFloatBytesExpected, "kind comm: largest message, bytes",
                    integer_schema(kFloatBytes), defaults.max_bytes, integer_normaliser(kFloatBytes, kFloatBytesExpected)),
      owned_integer_setting("comm_size_factor", "an integer from 2 to 1024", "kind comm: each size is the last × this", {2, 1024}, defaults.size_factor),
      owned_integer_setting("comm_iterations", "an integer from 1 to 100000", "kind comm: timed reductions per size", {1, 100000}, defaults.iterations),
      owned_integer_setting("comm_warmup_iterations", "an integer from 0 to 100000", "kind comm: untimed reductions first", {0, 100000}, defaults.warmup_iterations),
  };
}

CommOptions comm_options(const PointSettings& settings) {
  CommOptions options;
  options.min_bytes = settings.option("comm_min_bytes", options.min_bytes);
  options.max_bytes = settings.option("comm_max_bytes", options.max_bytes);
  options.size_factor = settings.option("comm_size_factor", options.size_factor);
  options.iterations = settings.option("comm_iterations", options.iterations);
  options.warmup_iterations = settings.option("comm_warmup_iterations", options.warmup_iterations);
  return options;
}

}  // namespace harness
