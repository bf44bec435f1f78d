// Typed values out of parsed JSON, for experiment settings and launcher options. Every reader
// throws ConfigError "<where>: expected <what>, got <value>": one line, the value echoed short
// and escaped (describe_json).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "harness/common/json.h"

namespace harness {

[[noreturn]] void fail_expected(const std::string& where, std::string_view expected, const Json& got);

// An integer in [min, max]: 4 and 4.0 are accepted, 4.5 and "4" are not (JSON has one number type).
int64_t read_integer(const Json& value, const std::string& where, int64_t min, int64_t max,
                     std::string_view expected);
double read_positive_number(const Json& value, const std::string& where);       // > 0, finite
double read_non_negative_number(const Json& value, const std::string& where);   // >= 0, finite
bool read_boolean(const Json& value, const std::string& where);                 // true or false
std::string read_nonempty_string(const Json& value, const std::string& where, std::string_view expected);
// One of `choices`; the message lists them: "\"weak\" or \"strong\"".
std::string read_choice(const Json& value, const std::string& where,
                        std::initializer_list<std::string_view> choices);
// The expected text read_choice prints for `choices`.
std::string choices_text(std::initializer_list<std::string_view> choices);

}  // namespace harness
