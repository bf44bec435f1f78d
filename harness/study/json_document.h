// Experiment files as JSON documents, read strictly: what nlohmann's parser accepts silently or
// cannot survive is an error naming the place (a key repeated in one object, nesting deeper than
// any experiment needs, keys that would garble messages), and a syntax error says where it is.
#pragma once

#include <string>

#include "harness/common/json.h"

namespace harness {

// Throws ConfigError "<source_path>: invalid JSON: ... at line L, column C" and the like.
Json parse_json_document(const std::string& text, const std::string& source_path);

}  // namespace harness
