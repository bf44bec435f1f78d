#include "harness/check/build_pairs.h"

#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/check/check_statistics.h"

namespace harness {
namespace {

// The settings its build ran a configuration with, from its first record that says.
std::optional<Json> settings_run(const Configuration& configuration) {
  for (const auto* records : {&configuration.ok, &configuration.not_ok}) {
    for (const auto& [repeat, record] : *records) {
      if (!record->build) return to_json(record->settings);  // the running harness: as recorded
      if (!record->build->settings.empty()) return record->build->settings;
    }
  }
  return std::nullopt;
}

// As configuration labels show values: numbers as plain decimals, strings without quotes.
std::string value_text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.is_number() ? format_number(value.get<double>()) : value.dump();
}

// The record of `repeat` of `configuration`, ok or failed; null when it has none.
const PointRecord* record_of(const Configuration& configuration, int repeat) {
  for (const auto* records : {&configuration.ok, &configuration.not_ok}) {
    if (const auto found = records->find(repeat); found != records->end()) return found->second;
  }
  return nullptr;
}

}  // namespace

std::string differing_build_settings(const Configuration& candidate, const Configuration& other) {
  const std::optional<Json> mine = settings_run(candidate);
  const std::optional<Json> theirs = settings_run(other);
  if (!mine || !theirs) return "";
  // The keys in which the configurations differ on purpose (build, and --against's) are no news.
  const Json my_identity = to_json(candidate.settings);
  const Json their_identity = to_json(other.settings);
  std::vector<std::string> differences;
  for (const auto& [key, value] : mine->items()) {
    if (key == "build" || !theirs->contains(key) || (*theirs)[key] == value) continue;
    if (my_identity.contains(key) && their_identity.contains(key) && my_identity[key] != their_identity[key]) continue;
    differences.push_back(fmt::format("{} {} against {}", key, value_text(value), value_text((*theirs)[key])));
  }
  return fmt::format("{}", fmt::join(differences, ", "));
}

std::string unbalanced_order(const Configuration& candidate, const Configuration& reference) {
  int after = 0;
  int pairs = 0;
  for (const auto* records : {&candidate.ok, &candidate.not_ok}) {
    for (const auto& [repeat, record] : *records) {
      const PointRecord* other = record_of(reference, repeat);
      if (other == nullptr || record->index == other->index) continue;  // no pair, or positions not recorded
      ++pairs;
      if (record->index > other->index) ++after;
    }
  }
  if (pairs < 2 || after * 2 == pairs) return "";
  return fmt::format("ran after its reference in {} of {} repeats", after, pairs);
}

}  // namespace harness
