#include "harness/common/option_rows.h"

#include <deque>
#include <mutex>

#include <fmt/format.h>

namespace harness {

std::string_view kept_text(std::string text) {
  // A deque never moves its elements, so the views stay valid.
  static std::mutex mutex;
  static std::deque<std::string> texts;
  const std::lock_guard<std::mutex> lock(mutex);
  return texts.emplace_back(std::move(text));
}

std::string_view integer_schema(IntegerBounds bounds) {
  std::string schema = fmt::format(R"({{"type": "integer", "minimum": {})", bounds.min);
  if (bounds.max != INT64_MAX) schema += fmt::format(R"(, "maximum": {})", bounds.max);
  if (bounds.multiple_of > 1) schema += fmt::format(R"(, "multipleOf": {})", bounds.multiple_of);
  return kept_text(schema + "}");
}

std::string_view choice_schema(std::initializer_list<std::string_view> choices) {
  std::string list;
  for (const std::string_view choice : choices) {
    if (!list.empty()) list += ", ";
    list += Json(std::string(choice)).dump();
  }
  return kept_text(fmt::format(R"({{"enum": [{}]}})", list));
}

int64_t read_integer(const Json& value, const std::string& where, IntegerBounds bounds, std::string_view expected) {
  const int64_t number = read_integer(value, where, bounds.min, bounds.max, expected);
  if (bounds.multiple_of > 1 && number % bounds.multiple_of != 0) fail_expected(where, expected, value);
  return number;
}

std::function<Json(const Json& value, const std::string& where)> integer_normaliser(IntegerBounds bounds,
                                                                                   std::string_view expected) {
  return [bounds, expected](const Json& value, const std::string& where) {
    return Json(read_integer(value, where, bounds, expected));
  };
}

}  // namespace harness
