#include "harness/check/check_options.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/text.h"
#include "harness/study/settings.h"

namespace harness {
namespace {

constexpr const char* kThresholdExpected = "a relative change such as 0.15 or \"15%\"";

// 0.15, "0.15" or "15%": a finite relative change > 0.
double parse_threshold(const Json& value, const std::string& where) {
  double threshold = 0;
  if (value.is_number()) {
    threshold = value.get<double>();
  } else if (value.is_string()) {
    std::string text = value.get<std::string>();
    const bool percent = !text.empty() && text.back() == '%';
    if (percent) text.pop_back();
    std::size_t used = 0;
    try {
      threshold = std::stod(text, &used);
    } catch (const std::exception&) {
      fail_expected(where, kThresholdExpected, value);
    }
    if (used != text.size() || text.empty()) fail_expected(where, kThresholdExpected, value);
    if (percent) threshold /= 100;
  } else {
    fail_expected(where, kThresholdExpected, value);
  }
  if (!std::isfinite(threshold) || threshold <= 0 || threshold > 10) {
    fail_expected(where, "a relative change above 0 and at most 10 (1000%)", value);
  }
  return threshold;
}

void set_threshold(CheckOptions& options, const CheckMetric& metric, const Json& value, const std::string& where) {
  const double threshold = parse_threshold(value, where);
  // A metric where higher is better cannot fall by 100% or more.
  if (metric.better == Better::kHigher && threshold >= 1) {
    fail_expected(where, fmt::format("a relative change below 1 (100%): higher {} is better", metric.name), value);
  }
  options.limits[std::string(metric.name)].threshold = threshold;
}

void set_floor(CheckOptions& options, const CheckMetric& metric, const Json& value, const std::string& where) {
  options.limits[std::string(metric.name)].floor = read_non_negative_number(value, where);
}

// "NAME=VALUE" -> the metric and the value as JSON text would give it (a number, else a string).
std::pair<const CheckMetric*, Json> split_argument(const std::string& flag, const std::string& argument) {
  const auto equals = argument.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == argument.size()) {
    throw ConfigError(fmt::format("{} {}: expected METRIC=VALUE, such as comm_time=0.15", flag, describe_text(argument)));
  }
  const CheckMetric& metric = find_check_metric(argument.substr(0, equals), flag);
  const std::string text = argument.substr(equals + 1);
  Json value = text;
  try {
    const Json parsed = Json::parse(text);
    if (parsed.is_number()) value = parsed;
  } catch (const Json::exception&) {
    // Not a number: the setter says what it expected.
  }
  return {&metric, value};
}

}  // namespace

bool CheckOptions::selected(std::string_view metric) const {
  return metrics.empty() || std::find(metrics.begin(), metrics.end(), metric) != metrics.end();
}

CheckOptions default_check_options() {
  CheckOptions options;
  for (const auto& metric : check_metric_table()) {
    options.limits[std::string(metric.name)] = {metric.threshold, metric.floor};
  }
  return options;
}

void apply_check_block(CheckOptions& options, const Json& block, const std::string& where) {
  if (!block.is_object()) fail_expected(where, "an object with \"against\" and \"metrics\"", block);
  for (const auto& [key, value] : block.items()) {
    if (key == "against") {
      options.against = read_against(value, where + ".against");
      options.against_where = where + ".against";
    } else if (key == "metrics") {
      if (!value.is_object()) fail_expected(where + ".metrics", "an object of metric names", value);
      for (const auto& [name, limits] : value.items()) {
        const std::string metric_where = where + ".metrics." + name;
        const CheckMetric& metric = find_check_metric(name, where + ".metrics");
        if (!limits.is_object() || limits.empty()) {
          fail_expected(metric_where, "an object with \"threshold\" and/or \"floor\"", limits);
        }
        for (const auto& [field, setting] : limits.items()) {
          if (field == "threshold") {
            set_threshold(options, metric, setting, metric_where + ".threshold");
          } else if (field == "floor") {
            set_floor(options, metric, setting, metric_where + ".floor");
          } else {
            throw ConfigError(fmt::format("{}: unknown key {} (expected threshold or floor)", metric_where,
                                          describe_text(field)));
          }
        }
      }
    } else {
      throw ConfigError(fmt::format("{}: unknown key {} (expected against or metrics)", where, describe_text(key)));
    }
  }
}

void apply_threshold_argument(CheckOptions& options, const std::string& argument) {
  const auto [metric, value] = split_argument("--threshold", argument);
  set_threshold(options, *metric, value, "--threshold " + std::string(metric->name));
}

void apply_floor_argument(CheckOptions& options, const std::string& argument) {
  const auto [metric, value] = split_argument("--floor", argument);
  set_floor(options, *metric, value, "--floor " + std::string(metric->name));
}

void select_metrics(CheckOptions& options, const std::string& list) {
  for (const std::string& name : split_comma_list(list, "--metrics")) {
    options.metrics.emplace_back(find_check_metric(name, "--metrics").name);
  }
}

Json check_block_schema() {
  Json metrics = Json::object();
  for (const auto& metric : check_metric_table()) {
    metrics[std::string(metric.name)] = {
        {"description", std::string(metric.help)},
        {"type", "object"},
        {"additionalProperties", false},
        {"minProperties", 1},
        {"properties",
         {{"threshold",
           {{"description", fmt::format("relative change that may regress (default {:g}, or \"{:g}%\")",
                                        metric.threshold, metric.threshold * 100)},
            {"anyOf", Json::array({{{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 10}},
                                   {{"type", "string"}, {"pattern", "^[0-9.]+%?$"}}})}}},
          {"floor",
           {{"description", fmt::format("absolute difference ignored below this, {} (default {:g})", metric.unit,
                                        metric.floor)},
            {"type", "number"},
            {"minimum", 0}}}}}};
  }
  return {{"description", "what `harness check` compares, and how strictly (docs/ci-gate.md)"},
          {"type", "object"},
          {"additionalProperties", false},
          {"properties",
           {{"against",
             {{"description", "each configuration is compared with the one that has these values (harness check --against)"},
              {"$ref", "#/$defs/settings"},
              {"minProperties", 1}}},
            {"metrics", {{"type", "object"}, {"additionalProperties", false}, {"properties", metrics}}}}}};
}

Json read_against(const Json& values, const std::string& where) {
  if (!values.is_object() || values.empty()) fail_expected(where, "an object of setting values", values);
  Json normalised = Json::object();
  for (const auto& [key, value] : values.items()) {
    if (key == "kind") throw ConfigError(where + ".kind: a reference of another kind cannot be compared");
    PointSettings settings;
    apply_setting(settings, key, value, where + "." + key);
    normalised[key] = to_json(settings)[key];
  }
  return normalised;
}

}  // namespace harness
