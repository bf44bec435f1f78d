// The common kinds of option: an integer within bounds, a boolean, one of a few strings. Each
// builder states a value's bounds once, and both the reader (its one-line error) and the JSON
// Schema (experiments/schema.json, --help) come from them, so the two cannot disagree. Used by the
// settings table (fields of PointSettings, and the settings that backends, kinds and workloads
// own) and by the launchers' options.
#pragma once

#include <cstdint>
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/common/json_values.h"
#include "harness/common/option_table.h"

namespace harness {

// Keeps `text` for the life of the program: rows hold views of the texts built for them.
std::string_view kept_text(std::string text);

// The integers an option accepts.
struct IntegerBounds {
  int64_t min = 0;
  int64_t max = INT64_MAX;  // INT64_MAX: the schema states no maximum
  int64_t multiple_of = 1;  // above 1: only multiples of it (the schema's "multipleOf")
};

// {"type": "integer", "minimum": MIN, "maximum": MAX, "multipleOf": M}, as far as `bounds` limit.
std::string_view integer_schema(IntegerBounds bounds);
// {"enum": ["a", "b"]}
std::string_view choice_schema(std::initializer_list<std::string_view> choices);

// read_integer within `bounds`; ConfigError "<where>: expected <expected>, got ..." outside them.
int64_t read_integer(const Json& value, const std::string& where, IntegerBounds bounds, std::string_view expected);

// The reader of an owned setting (a backend's, a kind's, a workload's) that is an integer within
// `bounds`: returns the value as records store it.
std::function<Json(const Json& value, const std::string& where)> integer_normaliser(IntegerBounds bounds,
                                                                                   std::string_view expected);

// A row for an integer field of Target within `bounds`, which the field's type must hold (a row
// that could not store every value its schema allows is a programming error, thrown as the table
// is built: every table is built by the tests).
template <typename Target, typename Integer>
OptionRow<Target> integer_row(std::string_view key, std::string_view expected, std::string_view help,
                              IntegerBounds bounds, Integer Target::*field) {
  if (std::cmp_less(bounds.min, std::numeric_limits<Integer>::min()) ||
      std::cmp_greater(bounds.max, std::numeric_limits<Integer>::max())) {
    throw std::logic_error(std::string(key) + ": bounds beyond what its field's type holds");
  }
  return {key, expected, help, integer_schema(bounds),
          [expected, bounds, field](Target& target, const Json& value, const std::string& where) {
            target.*field = static_cast<Integer>(read_integer(value, where, bounds, expected));
          },
          [field](const Target& target) { return Json(target.*field); }};
}

// A row for a bool field of Target.
template <typename Target>
OptionRow<Target> boolean_row(std::string_view key, std::string_view help, bool Target::*field) {
  return {key, "true or false", help, R"({"type": "boolean"})",
          [field](Target& target, const Json& value, const std::string& where) {
            target.*field = read_boolean(value, where);
          },
          [field](const Target& target) { return Json(target.*field); }};
}

// A row for a string field of Target that holds one of `choices`.
template <typename Target>
OptionRow<Target> choice_row(std::string_view key, std::string_view help,
                             std::initializer_list<std::string_view> choices, std::string Target::*field) {
  const std::string_view expected = kept_text(choices_text(choices));
  const std::vector<std::string_view> values(choices);
  return {key, expected, help, choice_schema(choices),
          [expected, values, field](Target& target, const Json& value, const std::string& where) {
            if (!value.is_string() ||
                std::find(values.begin(), values.end(), value.get_ref<const std::string&>()) == values.end()) {
              fail_expected(where, expected, value);
            }
            target.*field = value.get<std::string>();
          },
          [field](const Target& target) { return Json(target.*field); }};
}

}  // namespace harness
