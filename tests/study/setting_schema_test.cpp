// schema.json and the readers agree: every bound, choice and type that a row's JSON Schema states
// is the one its reader enforces, for the settings (with every backend's, kind's and workload's own)
// and each launcher's options. An editor that checks an experiment file against the schema then
// accepts exactly what `harness run` accepts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/option_table.h"
#include "harness/launch/local_scheduler.h"
#include "harness/launch/slurm_options.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

// What a row accepts at and around each edge its schema states, where that differs from it.
template <typename Target>
std::vector<std::string> disagreements(const std::vector<OptionRow<Target>>& rows) {
  std::vector<std::string> found;
  for (const auto& row : rows) {
    const Json schema = Json::parse(row.json_schema);
    const auto expect = [&](const Json& value, bool accepted) {
      Target target{};
      bool read = true;
      try {
        row.read(target, value, "test");
      } catch (const ConfigError&) {
        read = false;
      }
      if (read != accepted) {
        found.push_back(fmt::format("{}: {} is {} by the reader, but the schema {} says otherwise", row.key,
                                    value.dump(), read ? "accepted" : "refused", row.json_schema));
      }
    };
    if (schema.contains("enum")) {
      for (const Json& choice : schema["enum"]) expect(choice, true);
      expect(Json("not one of them"), false);
    }
    const std::string type = schema.value("type", "");
    if (type == "boolean") {
      expect(Json(true), true);
      expect(Json(false), true);
      expect(Json(1), false);
    }
    if (type == "integer" || type == "number") {
      const bool whole = type == "integer";
      const int64_t multiple = schema.value("multipleOf", int64_t{1});
      if (schema.contains("minimum")) {
        const double minimum = schema["minimum"].get<double>();
        expect(Json(schema["minimum"]), true);
        expect(whole ? Json(schema["minimum"].get<int64_t>() - multiple) : Json(minimum - 0.5), false);
        if (whole) expect(Json(minimum + 0.5), false);
        if (multiple > 1) expect(Json(schema["minimum"].get<int64_t>() + 1), false);
      }
      if (schema.contains("exclusiveMinimum")) {
        expect(Json(schema["exclusiveMinimum"]), false);
        expect(Json(schema["exclusiveMinimum"].get<double>() + 0.5), true);
      }
      if (schema.contains("maximum")) {
        expect(Json(schema["maximum"]), true);
        expect(whole ? Json(schema["maximum"].get<int64_t>() + multiple) : Json(schema["maximum"].get<double>() + 0.5),
               false);
      }
      expect(Json("1"), false);
    }
  }
  return found;
}

TEST(SettingSchema, EveryBoundChoiceAndTypeOfTheSchemaIsTheReaders) {
  for (const std::string& problem : disagreements(setting_table())) ADD_FAILURE() << problem;
  for (const std::string& problem : disagreements(local_option_rows())) ADD_FAILURE() << problem;
  for (const std::string& problem : disagreements(slurm_option_rows())) ADD_FAILURE() << problem;
}

TEST(SettingSchema, TheCheckSeesEveryKindOfRow) {
  // The test above is only as good as the rows it reaches: integers with and without a maximum,
  // multiples, numbers, choices and booleans are all among the settings.
  int integers = 0, multiples = 0, numbers = 0, choices = 0, booleans = 0;
  for (const auto& row : setting_table()) {
    const Json schema = Json::parse(row.json_schema);
    const std::string type = schema.value("type", "");
    integers += type == "integer";
    multiples += schema.contains("multipleOf");
    numbers += type == "number";
    choices += schema.contains("enum");
    booleans += type == "boolean";
  }
  EXPECT_GE(integers, 20);
  EXPECT_GE(multiples, 3);
  EXPECT_GE(numbers, 6);
  EXPECT_GE(choices, 6);
  EXPECT_GE(booleans, 3);
}

}  // namespace
}  // namespace harness
