#include "harness/common/json_values.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"

namespace harness {

void fail_expected(const std::string& where, std::string_view expected, const Json& got) {
  throw ConfigError(fmt::format("{}: expected {}, got {}", where, expected, describe_json(got)));
}

int64_t read_integer(const Json& value, const std::string& where, int64_t min, int64_t max,
                     std::string_view expected) {
  if (value.is_number_integer()) {
    // An unsigned value above INT64_MAX reads as negative through get<int64_t>().
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      fail_expected(where, expected, value);
    }
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
  fail_expected(where, expected, value);
}

double read_positive_number(const Json& value, const std::string& where) {
  if (value.is_number() && value.get<double>() > 0 && std::isfinite(value.get<double>())) {
    return value.get<double>();
  }
  fail_expected(where, "a positive number", value);
}

double read_non_negative_number(const Json& value, const std::string& where) {
  if (value.is_number() && value.get<double>() >= 0 && std::isfinite(value.get<double>())) {
    return value.get<double>();
  }
  fail_expected(where, "a non-negative number", value);
}

bool read_boolean(const Json& value, const std::string& where) {
  if (!value.is_boolean()) fail_expected(where, "true or false", value);
  return value.get<bool>();
}

std::string read_nonempty_string(const Json& value, const std::string& where,
                                 std::string_view expected) {
  if (value.is_string() && !value.get_ref<const std::string&>().empty()) {
    return value.get<std::string>();
  }
  fail_expected(where, expected, value);
}

std::string choices_text(std::initializer_list<std::string_view> choices) {
  std::string text;
  std::size_t i = 0;
  for (const auto choice : choices) {
    if (i > 0) text += i + 1 == choices.size() ? " or " : ", ";
    text += fmt::format("\"{}\"", choice);
    ++i;
  }
  return text;
}

std::string read_choice(const Json& value, const std::string& where,
                        std::initializer_list<std::string_view> choices) {
  if (value.is_string() &&
      std::find(choices.begin(), choices.end(), value.get_ref<const std::string&>()) != choices.end()) {
    return value.get<std::string>();
  }
  fail_expected(where, choices_text(choices), value);
}

}  // namespace harness
