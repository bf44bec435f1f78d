// Tests of experiment files: the one-line error that parsing a text gives.
#pragma once

#include <string>

#include "harness/common/errors.h"
#include "harness/study/experiment.h"

namespace harness {

// The message of the ConfigError that parsing `text` (as "exp.json") throws, or "" if it parses.
inline std::string parse_error(const std::string& text) {
  try {
    parse_experiment(text, "exp.json");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace harness
