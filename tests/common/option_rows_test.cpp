// The builders of common options: the schema states the bounds the reader enforces.
#include "harness/common/option_rows.h"

#include <gtest/gtest.h>

#include <string>

#include "harness/common/errors.h"

namespace harness {
namespace {

TEST(OptionRows, IntegerSchemaStatesTheBoundsItIsGiven) {
  EXPECT_EQ(integer_schema({1, 4096}), R"({"type": "integer", "minimum": 1, "maximum": 4096})");
  EXPECT_EQ(integer_schema({0}), R"({"type": "integer", "minimum": 0})");  // no maximum at INT64_MAX
  EXPECT_EQ(integer_schema({4096, int64_t{1} << 30, 4}),
            R"({"type": "integer", "minimum": 4096, "maximum": 1073741824, "multipleOf": 4})");
}

TEST(OptionRows, ChoiceSchemaListsTheChoicesAsJsonStrings) {
  EXPECT_EQ(choice_schema({"weak", "strong"}), R"({"enum": ["weak", "strong"]})");
  EXPECT_EQ(Json::parse(choice_schema({"a\"b", "c"}))["enum"][0], "a\"b");
}

TEST(OptionRows, IntegersOutsideTheBoundsOrOffTheMultipleAreRefusedWithTheRowsText) {
  constexpr IntegerBounds kBounds{8, 64, 8};
  EXPECT_EQ(read_integer(Json(16), "x", kBounds, "a multiple of 8 from 8 to 64"), 16);
  for (const Json& bad : {Json(0), Json(12), Json(72), Json(16.5), Json("16")}) {
    try {
      read_integer(bad, "exp.json: settings.x", kBounds, "a multiple of 8 from 8 to 64");
      ADD_FAILURE() << bad.dump() << " was accepted";
    } catch (const ConfigError& error) {
      EXPECT_EQ(std::string(error.what()).rfind("exp.json: settings.x: expected a multiple of 8 from 8 to 64, got ", 0), 0)
          << error.what();
    }
  }
  EXPECT_EQ(integer_normaliser({0}, "a non-negative integer")(Json(5.0), "x"), Json(5));
}

struct Options {
  int count = 1;
  bool flag = false;
  std::string mode = "a";
};

TEST(OptionRows, RowsReadAndWriteTheirField) {
  Options options;
  const auto count = integer_row("count", "an integer from 1 to 9", "how many", {1, 9}, &Options::count);
  const auto flag = boolean_row("flag", "whether", &Options::flag);
  const auto mode = choice_row("mode", "which", {"a", "b"}, &Options::mode);
  count.read(options, Json(7), "x");
  flag.read(options, Json(true), "x");
  mode.read(options, Json("b"), "x");
  EXPECT_EQ(count.write(options), Json(7));
  EXPECT_EQ(flag.write(options), Json(true));
  EXPECT_EQ(mode.write(options), Json("b"));
  EXPECT_EQ(mode.expected, R"("a" or "b")");
  EXPECT_THROW(count.read(options, Json(10), "x"), ConfigError);
  EXPECT_THROW(flag.read(options, Json(1), "x"), ConfigError);
  EXPECT_THROW(mode.read(options, Json("c"), "x"), ConfigError);
  EXPECT_EQ(options.count, 7);  // a refused value changes nothing
  EXPECT_EQ(options.mode, "b");
}

}  // namespace
}  // namespace harness
