// Tables of named options read from JSON objects: the settings of an experiment's points, the
// options of a launcher. A row names its key, says what a valid value looks like, documents it
// and reads it; the table is the single source for parsing, --help and schema.json. An unknown key
// is an error that suggests the closest one.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/json.h"
#include "harness/common/text.h"

namespace harness {

template <typename Target>
struct OptionRow {
  std::string_view key;
  std::string_view expected;     // what a valid value looks like, for messages and docs
  std::string_view help;         // one line for --help and schema.json
  std::string_view json_schema;  // the value's JSON Schema (type and bounds), for schema.json
  // Sets the option from a value; throws ConfigError naming `where` ("exp.json: sweep.ranks[2]").
  std::function<void(Target&, const Json& value, const std::string& where)> read;
  std::function<Json(const Target&)> write;
};

template <typename Target>
const OptionRow<Target>* find_option_row(const std::vector<OptionRow<Target>>& rows,
                                         std::string_view key) {
  for (const auto& row : rows) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

// "<where>: unknown <what> "<key>" (did you mean "<closest>"?)"; when none is close, the keys
// of a short table are listed (a long one, such as the settings, is in --help).
template <typename Target>
[[noreturn]] void fail_unknown_option(const std::vector<OptionRow<Target>>& rows,
                                      std::string_view key, const std::string& where,
                                      std::string_view what) {
  std::vector<std::string_view> keys;
  for (const auto& row : rows) keys.push_back(row.key);
  const std::string suggestion = closest_name(key, keys);
  constexpr std::size_t kMostKeysListed = 12;
  std::string hint;
  if (!suggestion.empty()) {
    hint = fmt::format(" (did you mean \"{}\"?)", suggestion);
  } else if (keys.size() <= kMostKeysListed) {
    hint = fmt::format(" (expected one of: {})", fmt::join(keys, ", "));
  }
  throw ConfigError(fmt::format("{}: unknown {} {}{}", where, what, describe_text(key), hint));
}

template <typename Target>
void apply_option(const std::vector<OptionRow<Target>>& rows, Target& target,
                  std::string_view key, const Json& value, const std::string& where,
                  std::string_view what) {
  const OptionRow<Target>* row = find_option_row(rows, key);
  if (row == nullptr) fail_unknown_option(rows, key, where, what);
  row->read(target, value, where);
}

// Every row's value, in table order.
template <typename Target>
Json options_to_json(const std::vector<OptionRow<Target>>& rows, const Target& target) {
  Json object = Json::object();
  for (const auto& row : rows) object[std::string(row.key)] = row.write(target);
  return object;
}

}  // namespace harness
