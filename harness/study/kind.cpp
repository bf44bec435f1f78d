#include "harness/study/kind.h"

#include "harness/common/json_values.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

// Message sizes are whole float32 elements, at most 1 GiB.
Json float_bytes(const Json& value, const std::string& where) {
  constexpr const char* kExpected = "a positive multiple of 4 (bytes of float32), at most 2^30";
  const int64_t bytes = read_integer(value, where, 4, int64_t{1} << 30, kExpected);
  if (bytes % 4 != 0) fail_expected(where, kExpected, value);
  return bytes;
}

// An integer in [min, max], as its row's reader.
auto integer_from(int64_t min, int64_t max, std::string_view expected) {
  return [min, max, expected](const Json& value, const std::string& where) {
    return Json(read_integer(value, where, min, max, expected));
  };
}

}  // namespace

std::string_view kind_name(Kind kind) { return kind == Kind::kTrain ? "train" : "comm"; }

std::vector<SettingRow> comm_setting_rows() {
  const CommOptions defaults;
  return {
      owned_setting("comm_min_bytes", "a positive multiple of 4", "kind comm: smallest message, bytes",
                    R"({"type": "integer", "minimum": 4, "maximum": 1073741824, "multipleOf": 4})",
                    defaults.min_bytes, float_bytes),
      owned_setting("comm_max_bytes", "a positive multiple of 4", "kind comm: largest message, bytes",
                    R"({"type": "integer", "minimum": 4, "maximum": 1073741824, "multipleOf": 4})",
                    defaults.max_bytes, float_bytes),
      owned_setting("comm_size_factor", "an integer from 2 to 1024",
                    "kind comm: each size is the last × this",
                    R"({"type": "integer", "minimum": 2, "maximum": 1024})", defaults.size_factor,
                    integer_from(2, 1024, "an integer from 2 to 1024")),
      owned_setting("comm_iterations", "a positive integer", "kind comm: timed reductions per size",
                    R"({"type": "integer", "minimum": 1, "maximum": 100000})", defaults.iterations,
                    integer_from(1, 100000, "an integer from 1 to 100000")),
      owned_setting("comm_warmup_iterations", "a non-negative integer",
                    "kind comm: untimed reductions first",
                    R"({"type": "integer", "minimum": 0, "maximum": 100000})",
                    defaults.warmup_iterations, integer_from(0, 100000, "an integer from 0 to 100000")),
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
