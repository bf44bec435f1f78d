// Builders of owned settings (settings.h's owned_setting) of the common kinds, for the kinds,
// backends and workloads that own them. Inline, as owned_setting is.
#pragma once

#include <string_view>
#include <utility>

#include "harness/common/option_rows.h"
#include "harness/study/settings.h"

namespace harness {

// An owned setting that is an integer within `bounds`: its reader and its schema from them.
inline SettingRow owned_integer_setting(std::string_view key, std::string_view expected, std::string_view help,
                                        IntegerBounds bounds, Json fallback) {
  return owned_setting(key, expected, help, integer_schema(bounds), std::move(fallback),
                       integer_normaliser(bounds, expected));
}

}  // namespace harness
