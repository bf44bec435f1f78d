// For the launcher tests: the one-line error a launcher block gives, "" when it is accepted.
#pragma once

#include <string>

#include "harness/common/errors.h"
#include "harness/launch/scheduler.h"
#include "harness/study/experiment.h"

namespace harness::testing {

// `launcher_json` is the experiment's launcher block, its name included; errors name
// "exp.json: launcher".
inline std::string option_error(const std::string& launcher_json) {
  try {
    LauncherSpec spec;
    spec.options = Json::parse(launcher_json);
    spec.name = spec.options["name"];
    spec.options.erase("name");
    spec.where = "exp.json: launcher";
    make_scheduler(spec);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

}  // namespace harness::testing
