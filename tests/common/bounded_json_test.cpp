// Records and the other JSON files of a results directory are read within bounds: size before a
// byte is read, nesting and the memory the document would take before it is built.
#include "harness/common/bounded_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/common/errors.h"
#include "harness/common/files.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

std::string write_file(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("harness_bounded_json_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// The Error that `read` throws, or "".
template <typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

void expect_one_short_line(const std::string& text) {
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_LT(text.size(), 400U) << text;
}

// 100,000 levels once crashed plot, check, status and resume (SIGSEGV in the recursive copy).
TEST(BoundedJson, NestingDeeperThanTheCapIsRefusedWithoutRecursion) {
  const std::string deep = R"({"schema_version": 1, "deep": )" + nested(100000) + "}";
  const std::string text = error_of([&] { parse_bounded_json(deep, "p.json"); });
  EXPECT_EQ(text, "p.json: expected lists and objects nested at most 256 deep, got deeper");
  EXPECT_NE(error_of([&] { parse_bounded_json(nested(kMaxRecordNestingDepth + 1), "p.json"); }), "");
  EXPECT_EQ(parse_bounded_json(nested(kMaxRecordNestingDepth), "p.json").size(), 1U);
  const std::string path = write_file("deep.json", deep);
  EXPECT_EQ(error_of([&] { read_json_file(path); }), path + ": expected lists and objects nested at most 256 deep, got deeper");
}

// A list of empty lists takes about 20 times its text once built: refused before it is built.
TEST(BoundedJson, DocumentThatWouldTakeManyTimesItsSizeInMemoryIsRefused) {
  std::string tiny = "[";
  for (int i = 0; i < 1000000; ++i) tiny += "[],";
  tiny += "[]]";
  const std::string text = error_of([&] { parse_bounded_json(tiny, "p.json"); });
  EXPECT_EQ(text.rfind("p.json: expected a document that takes at most 6 times its 2.9 MiB in memory", 0), 0U)
      << text;
  expect_one_short_line(text);
  // Numbers as records hold them (timings of 5 to 24 characters) pass, however many.
  std::string timings = R"({"step_s": [)";
  for (int i = 0; i < 1000000; ++i) timings += "0.0, 8.3864e-05, ";
  timings += "0.0]}";
  EXPECT_EQ(parse_bounded_json(timings, "p.json")["step_s"].size(), 2000001U);
  // A small document may cost more per byte.
  EXPECT_EQ(parse_bounded_json("[[], {}, [[]]]", "p.json").size(), 3U);
}

// ordered_json finds keys by a linear search: an object of 200,000 keys would take minutes.
TEST(BoundedJson, ObjectOfMoreKeysThanAnyRecordHoldsIsRefused) {
  std::string many = "{";
  for (int i = 0; i < 200000; ++i) many += "\"key number " + std::to_string(i) + "\": 1, ";
  many += "\"last\": 1}";
  EXPECT_EQ(error_of([&] { parse_bounded_json(many, "p.json"); }), "p.json: expected objects of at most 1000 keys, got more");
  std::string enough = "{";
  for (std::size_t i = 0; i + 1 < kMaxKeysPerObject; ++i) enough += "\"k" + std::to_string(i) + "\": 1, ";
  enough += "\"last\": 1}";
  EXPECT_EQ(parse_bounded_json(enough, "p.json").size(), kMaxKeysPerObject);
}

TEST(BoundedJson, FileAboveTheSizeCapIsRefusedBeforeItIsRead) {
  const std::string path = write_file("large.json", "[" + std::string(2000, ' ') + "]");
  const std::string text = error_of([&] { read_json_file(path, 1000); });
  EXPECT_EQ(text, path + ": expected a JSON file of at most 1000 bytes, got 2002 bytes");
  EXPECT_EQ(read_json_file(path, 2002).size(), 0U);
  // The default cap: a sparse file, so that the test needs no gigabyte of disk. Were it read, it
  // would be NUL bytes, an invalid JSON message rather than this one.
  const std::string huge = write_file("huge.json", "");
  ASSERT_EQ(::truncate(huge.c_str(), static_cast<off_t>(kMaxRecordBytes) + 1), 0);
  EXPECT_EQ(error_of([&] { read_json_file(huge); }),
            huge + ": expected a JSON file of at most 1024 MiB, got 1073741825 bytes");
  fs::remove(huge);
}

TEST(BoundedJson, TruncatedOrGarbledFilesAreOneShortLine) {
  for (const std::string& text : {std::string(R"({"schema_version": 1, "id": "p0)"),
                                  R"({"a": ")" + std::string(1 << 20, 'x'), std::string(""), std::string("not json")}) {
    const std::string path = write_file("garbled.json", text);
    const std::string message = error_of([&] { read_json_file(path); });
    EXPECT_EQ(message.rfind(path + ": invalid JSON: ", 0), 0U) << message;
    expect_one_short_line(message);
  }
}

}  // namespace
}  // namespace harness
