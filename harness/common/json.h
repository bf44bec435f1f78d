// The JSON type of the whole harness: objects keep their keys in insertion order, so records,
// schema.json and error messages list settings in the settings table's order.
#pragma once

#include <nlohmann/json.hpp>

namespace harness {

using Json = nlohmann::ordered_json;

}  // namespace harness
