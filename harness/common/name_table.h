// Lookup in the name -> factory tables of the extension points (workloads, backends): an
// unknown name is a ConfigError that lists the valid ones, in table order.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"

namespace harness {

// `Info` has a `name` member; `kind` is "workload", "backend", ... for the message.
template <typename Info>
const Info& find_by_name(const std::vector<Info>& table, std::string_view name,
                         std::string_view kind) {
  std::vector<std::string_view> names;
  for (const auto& info : table) {
    if (info.name == name) return info;
    names.push_back(info.name);
  }
  // describe_text: the name is the user's, and may be long or hold a newline.
  throw ConfigError(fmt::format("unknown {} {} (expected one of: {})", kind, describe_text(name),
                                fmt::join(names, ", ")));
}

}  // namespace harness
