#include "harness/study/json_document.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"

namespace harness {
namespace {

// Deep enough for any experiment file (they need fewer than 10 levels), shallow enough that
// nothing recursive over the document (dump, copies, comparisons) can overflow the stack.
constexpr std::size_t kMaxNestingDepth = 256;
// Every valid key is a name from a fixed table; a long key or one with a control character
// would make every message that names it long or several lines.
constexpr std::size_t kMaxKeyLength = 100;

// Builds the document as Json::parse does, but refuses what Json::parse accepts silently or
// cannot survive: a key repeated in one object (Json::parse keeps the last), nesting deeper than
// kMaxNestingDepth, and keys that would garble messages. nlohmann's SAX parser is iterative, so
// the depth is checked before anything recursive sees the document.
class ExperimentDocumentBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit ExperimentDocumentBuilder(std::string source_path)
      : source_path_(std::move(source_path)) {}

  Json& root() { return root_; }
  // nlohmann's message for the error that stopped the parse, and the offset of its last token.
  const std::string& error_message() const { return error_message_; }
  std::size_t error_position() const { return error_position_; }

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool value) override { return add(Json(value)); }
  bool number_integer(number_integer_t value) override { return add(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return add(Json(value)); }
  bool number_float(number_float_t value, const string_t& /*text*/) override {
    return add(Json(value));
  }
  bool string(string_t& value) override { return add(Json(std::move(value))); }
  bool binary(binary_t& value) override { return add(Json(std::move(value))); }

  bool start_object(std::size_t /*size*/) override { return open(Json::object()); }
  bool start_array(std::size_t /*size*/) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    Frame& object = frames_.back();
    const bool readable =
        key.size() <= kMaxKeyLength && std::none_of(key.begin(), key.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        });
    if (!readable) {
      const std::string where = path(frames_.size() - 1);
      throw ConfigError(fmt::format(
          "{}: {}expected keys of up to {} characters without control characters, got {}",
          source_path_, where.empty() ? "" : where + ": ", kMaxKeyLength, describe_text(key)));
    }
    if (object.value->contains(key)) {
      object.key = key;
      throw ConfigError(fmt::format(
          "{}: {}: duplicate key \"{}\"; expected each key once in an object (JSON would keep "
          "only the last)",
          source_path_, path(frames_.size()), key));
    }
    object.key = std::move(key);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const Json::exception& error) override {
    error_message_ = error.what();
    // `position` is just past the token; its start is where a reader looks.
    error_position_ = position - std::min(position, last_token.size());
    return false;
  }

 private:
  struct Frame {
    Json* value;      // an object or array being filled; stable while it is open
    std::string key;  // objects: the key whose value is being read
  };

  // Puts `value` where the parse is (the root, the current key or the end of the array).
  Json* insert(Json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& parent = frames_.back();
    if (parent.value->is_object()) return &((*parent.value)[parent.key] = std::move(value));
    parent.value->push_back(std::move(value));
    return &parent.value->back();
  }

  bool add(Json value) {
    insert(std::move(value));
    return true;
  }

  bool open(Json container) {
    frames_.push_back({insert(std::move(container)), {}});
    if (frames_.size() > kMaxNestingDepth) {
      const std::string where = path(frames_.size() - 1);
      throw ConfigError(
          fmt::format("{}: {}expected lists and objects nested at most {} deep, got deeper",
                      source_path_, where.empty() ? "" : where + ": ", kMaxNestingDepth));
    }
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  // Where the value being read inside frames_[0 .. levels) is, as "settings.lr" or
  // "exclude[1].ranks"; only the first few steps of a deep path.
  std::string path(std::size_t levels) const {
    constexpr std::size_t kMaxSteps = 4;
    std::string text;
    for (std::size_t i = 0; i < levels; ++i) {
      if (i == kMaxSteps) return text + "...";
      const Frame& frame = frames_[i];
      if (frame.value->is_object()) {
        text += (text.empty() ? "" : ".") + frame.key;
      } else {
        text += fmt::format("[{}]", frame.value->empty() ? 0 : frame.value->size() - 1);
      }
    }
    return text;
  }

  std::string source_path_;
  Json root_;
  std::vector<Frame> frames_;
  std::string error_message_;
  std::size_t error_position_ = 0;
};

// "line 3, column 7" of a byte offset, counting as nlohmann does (both from 1).
std::string line_and_column(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t column = line_start == std::string::npos ? offset : offset - line_start - 1;
  return fmt::format("line {}, column {}", line, column + 1);
}

}  // namespace

Json parse_json_document(const std::string& text, const std::string& source_path) {
  ExperimentDocumentBuilder builder(source_path);
  std::string message;
  bool positioned = false;
  try {
    if (Json::sax_parse(text, &builder)) return std::move(builder.root());
    message = builder.error_message();
    positioned = true;
  } catch (const Json::exception& error) {
    message = error.what();  // any other nlohmann error is still bad input, not a crash
  }
  // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line 3, ..."
  // or "[json.exception.out_of_range.406] number overflow parsing '1e400'" (no position).
  if (const auto pos = message.find("] "); pos != std::string::npos) {
    message = message.substr(pos + 2);
  }
  if (positioned && message.find(" at line ") == std::string::npos) {
    message += " at " + line_and_column(text, builder.error_position());
  }
  // The last token read ends the message and may be a whole long string.
  constexpr std::size_t kMaxMessageBytes = 200;
  throw ConfigError(
      fmt::format("{}: invalid JSON: {}", source_path, shortened(message, kMaxMessageBytes)));
}

}  // namespace harness
