#include "harness/common/bounded_json.h"

#include <vector>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"

namespace harness {
namespace {

// What nlohmann's containers cost on a 64-bit libstdc++, allocator overhead included: a value is
// 16 bytes wherever it sits; a list adds a std::vector, an object (ordered_json) a std::vector of
// key and value, a key its std::string; strings longer than the small-string buffer (15) add their
// characters. Vectors grow by doubling, which the factor below leaves room for.
constexpr std::size_t kValueBytes = 16;
constexpr std::size_t kListBytes = 24 + 16;
constexpr std::size_t kObjectBytes = 24 + 16;
constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kShortStringBytes = 15;
// Small documents may cost more per byte than large ones; this much is always allowed.
constexpr std::size_t kAllowedInMemoryBytes = std::size_t{1} << 20;

std::size_t string_bytes(std::size_t length) {
  return length > kShortStringBytes ? length + 1 + 16 : 0;
}

// Reads the document without building it: counts the nesting and the keys of each open object,
// estimates what the built document would take, and stops at the first bound crossed.
class BoundsCheck final : public nlohmann::json_sax<Json> {
 public:
  BoundsCheck(std::size_t max_depth, std::size_t max_memory_bytes)
      : max_depth_(max_depth), max_memory_bytes_(max_memory_bytes) {}

  bool too_deep() const { return too_deep_; }
  bool too_many_keys() const { return too_many_keys_; }
  bool too_large() const { return memory_bytes_ > max_memory_bytes_; }
  std::size_t memory_bytes() const { return memory_bytes_; }
  const std::string& error_message() const { return error_message_; }

  bool null() override { return add(kValueBytes); }
  bool boolean(bool /*value*/) override { return add(kValueBytes); }
  bool number_integer(number_integer_t /*value*/) override { return add(kValueBytes); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return add(kValueBytes); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return add(kValueBytes);
  }
  bool string(string_t& value) override { return add(kValueBytes + string_bytes(value.size())); }
  bool binary(binary_t& value) override { return add(kValueBytes + value.size()); }
  bool key(string_t& key) override {
    if (++open_keys_.back() > kMaxKeysPerObject) {
      too_many_keys_ = true;
      return false;
    }
    return add(kKeyBytes + string_bytes(key.size()));
  }

  bool start_object(std::size_t /*size*/) override { return open(kValueBytes + kObjectBytes); }
  bool start_array(std::size_t /*size*/) override { return open(kValueBytes + kListBytes); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const Json::exception& error) override {
    error_message_ = error.what();
    return false;
  }

 private:
  bool add(std::size_t bytes) {
    memory_bytes_ += bytes;
    return !too_large();
  }
  bool open(std::size_t bytes) {
    if (open_keys_.size() == max_depth_) {
      too_deep_ = true;
      return false;
    }
    open_keys_.push_back(0);
    return add(bytes);
  }
  bool close() {
    open_keys_.pop_back();
    return true;
  }

  std::size_t max_depth_;
  std::size_t max_memory_bytes_;
  std::vector<std::size_t> open_keys_;  // per open list or object, the keys read so far
  bool too_many_keys_ = false;
  std::size_t memory_bytes_ = 0;
  bool too_deep_ = false;
  std::string error_message_;
};

std::string mebibytes(std::size_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}

// nlohmann's message without its "[json.exception.parse_error.101] " and no longer than a line:
// the last token it quotes may be a long piece of the file.
std::string short_parse_message(std::string message) {
  if (const auto pos = message.find("] "); pos != std::string::npos) message = message.substr(pos + 2);
  constexpr std::size_t kMaxMessageBytes = 200;
  return shortened(message, kMaxMessageBytes);
}

}  // namespace

Json parse_bounded_json(const std::string& text, const std::string& path, std::size_t max_depth) {
  const std::size_t max_memory_bytes = kMaxBytesInMemoryPerTextByte * text.size() + kAllowedInMemoryBytes;
  BoundsCheck check(max_depth, max_memory_bytes);
  std::string message;
  try {
    if (!Json::sax_parse(text, &check)) message = check.error_message();
  } catch (const Json::exception& error) {
    message = error.what();  // any other nlohmann error is still bad input, not a crash
  }
  if (check.too_deep()) {
    throw Error(fmt::format("{}: expected lists and objects nested at most {} deep, got deeper", path,
                            max_depth));
  }
  if (check.too_many_keys()) {
    throw Error(fmt::format("{}: expected objects of at most {} keys, got more", path, kMaxKeysPerObject));
  }
  if (check.too_large()) {
    throw Error(fmt::format("{}: expected a document that takes at most {} times its {} in memory, "
                            "got more than {} (a mass of tiny values no record holds)",
                            path, kMaxBytesInMemoryPerTextByte, mebibytes(text.size()),
                            mebibytes(max_memory_bytes)));
  }
  if (!message.empty()) throw Error(fmt::format("{}: invalid JSON: {}", path, short_parse_message(message)));
  return Json::parse(text);
}

}  // namespace harness
