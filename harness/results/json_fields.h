// Reading the JSON the harness wrote (records, measurements, ledgers) field by field: a missing or
// mistyped field is an Error naming the file and the field's path, never a crash.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/json.h"

namespace harness {

// A JSON object read field by field.
class Fields {
 public:
  Fields(const Json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) fail("", "an object");
  }

  bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }
  const Json& at(const char* key) const {
    if (!object_.contains(key)) throw Error(fmt::format("{}: {} is missing", where_, path(key)));
    return object_.at(key);
  }
  Fields object(const char* key) const { return Fields(at(key), where_ + ": " + path(key)); }
  std::string text(const char* key) const {
    const Json& value = at(key);
    if (!value.is_string()) fail(key, "a string");
    return value.get<std::string>();
  }
  double number(const char* key) const {
    const Json& value = at(key);
    if (!value.is_number()) fail(key, "a number");
    return value.get<double>();
  }
  // A number, or NaN where JSON holds null (a diverged loss).
  double number_or_nan(const char* key) const {
    const Json& value = at(key);
    if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
    return number(key);
  }
  int64_t integer(const char* key) const {
    const Json& value = at(key);
    if (!value.is_number_integer()) fail(key, "an integer");
    return value.get<int64_t>();
  }
  bool boolean(const char* key) const {
    const Json& value = at(key);
    if (!value.is_boolean()) fail(key, "true or false");
    return value.get<bool>();
  }
  template <typename T>
  std::vector<T> list(const char* key) const {
    const Json& value = at(key);
    if (!value.is_array()) fail(key, "a list");
    try {
      return value.get<std::vector<T>>();
    } catch (const Json::exception&) {
      fail(key, "a list of numbers or strings, as written");
    }
  }
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const char* key, std::string_view expected) const {
    throw Error(fmt::format("{}: {}expected {}", where_,
                            key[0] == '\0' ? "" : path(key) + ": ", expected));
  }

 private:
  std::string path(const char* key) const { return key; }

  const Json& object_;
  std::string where_;
};

// The schema version an object was written with (1 to `newest`); newer ones are refused.
inline int readable_version(const Fields& fields, int newest) {
  const int64_t version = fields.integer("schema_version");
  if (version > newest) {
    throw Error(fmt::format("{}: record schema version {} is newer than this harness reads (up to "
                            "{}); read it with a newer harness",
                            fields.where(), version, newest));
  }
  if (version < 1) fields.fail("schema_version", "1 or more");
  return static_cast<int>(version);
}

}  // namespace harness
